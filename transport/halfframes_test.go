package transport

import (
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/store"
)

// TestTornCounterAcrossRestart explains the half-frames islandwatch
// reported after a server restart: the new server's island 1 has members
// a, b and c, which the old server had in two islands. While island 1
// waits for its first frame its view is missing (no poses: the engine
// hides it), yet the counter found a and b on one frame pair and c on
// another — left over from the old run — and counted a half-frame every
// render. Nothing was torn; the count was wrong. A Welcome now ends what
// was shown, and a missing view is never torn; a real tear within one run
// still counts.
func TestTornCounterAcrossRestart(t *testing.T) {
	a, b, c := island.MemberID{Stable: 1}, island.MemberID{Stable: 2}, island.MemberID{Stable: 3}
	oldRun := map[uint32]island.Manifest{1: {Island: 1, Topology: 1, Config: 1, Members: []island.MemberID{a, b}}, 2: {Island: 2, Topology: 1, Config: 1, Members: []island.MemberID{c}}}
	k := func(isl, seq uint32) island.Key {
		return island.Key{Island: isl, Epoch: 1, Topology: 1, Config: 1, Seq: seq}
	}
	view := func(isl uint32, key island.Key, ids ...island.MemberID) receiver.IslandView {
		v := receiver.IslandView{Island: isl, Mode: store.Interpolate, Left: key, Right: key}
		for _, id := range ids {
			v.Poses = append(v.Poses, receiver.Pose{ID: id})
		}
		return v
	}
	lookup := func(ms map[uint32]island.Manifest) func(uint32) (island.Manifest, bool) {
		return func(id uint32) (island.Manifest, bool) { m, ok := ms[id]; return m, ok }
	}
	tc := newTornCounter()
	if n := tc.count([]receiver.IslandView{view(1, k(1, 500), a, b), view(2, k(2, 500), c)}, 1, lookup(oldRun)); n != 0 {
		t.Fatalf("the old run: %d torn", n)
	}

	// Islands 1 and 2 merge in the old run: until the merged island's first
	// frame its view is missing, and nothing of it is shown.
	merged := map[uint32]island.Manifest{1: {Island: 1, Topology: 1, Config: 1, Members: []island.MemberID{a, b, c}}}
	if n := tc.count([]receiver.IslandView{{Island: 1, Mode: store.Empty}}, 1, lookup(merged)); n != 0 {
		t.Fatalf("a missing island counted %d torn", n)
	}

	newRun := map[uint32]island.Manifest{1: {Island: 1, Topology: 1, Config: 1, Members: []island.MemberID{a, b, c}}}
	missing := []receiver.IslandView{{Island: 1, Mode: store.Empty}}
	if n := tc.count(missing, 2, lookup(newRun)); n != 0 {
		t.Fatalf("a missing island of the new run counted %d torn", n)
	}
	// c is not shown in the new run: what the old run placed it on says
	// nothing about island 1 now.
	if n := tc.count([]receiver.IslandView{view(1, k(1, 2), a, b)}, 2, lookup(newRun)); n != 0 {
		t.Fatalf("a member the old run placed counted %d torn", n)
	}
	if n := tc.count([]receiver.IslandView{view(1, k(1, 3), a, b, c)}, 2, lookup(newRun)); n != 0 {
		t.Fatalf("the new run's first frame: %d torn", n)
	}
	// Within one run, a member another island's frame placed is a tear.
	split := map[uint32]island.Manifest{1: {Island: 1, Topology: 1, Config: 1, Members: []island.MemberID{a, b, c}}, 2: {Island: 2, Topology: 1, Config: 1, Members: []island.MemberID{c}}}
	if n := tc.count([]receiver.IslandView{view(2, k(2, 4), c), view(1, k(1, 4), a, b)}, 2, lookup(split)); n != 1 {
		t.Fatalf("a real tear counted %d, want 1", n)
	}
}

// TestTornCounterBeforeAMerge: islands 1 (a, b) and 2 (c) merge into
// island 1 at a time playback has not reached. Island 1's new manifest
// (topology 2: a, b, c) is known already, but each island is shown whole
// on its old frames until the merge: nothing is torn. Once island 1 shows
// topology 2, a member left on another frame pair is.
func TestTornCounterBeforeAMerge(t *testing.T) {
	a, b, c := island.MemberID{Stable: 1}, island.MemberID{Stable: 2}, island.MemberID{Stable: 3}
	k := func(isl, topo, seq uint32) island.Key {
		return island.Key{Island: isl, Epoch: 1, Topology: topo, Config: 1, Seq: seq}
	}
	view := func(isl uint32, key island.Key, ids ...island.MemberID) receiver.IslandView {
		v := receiver.IslandView{Island: isl, Mode: store.Interpolate, Left: key, Right: key}
		for _, id := range ids {
			v.Poses = append(v.Poses, receiver.Pose{ID: id})
		}
		return v
	}
	merged := map[uint32]island.Manifest{1: {Island: 1, Topology: 2, Config: 1, Members: []island.MemberID{a, b, c}},
		2: {Island: 2, Topology: 1, Config: 1, Members: []island.MemberID{c}}}
	lookup := func(id uint32) (island.Manifest, bool) { m, ok := merged[id]; return m, ok }
	tc := newTornCounter()
	if n := tc.count([]receiver.IslandView{view(1, k(1, 1, 9), a, b), view(2, k(2, 1, 9), c)}, 1, lookup); n != 0 {
		t.Fatalf("before the merge: %d torn", n)
	}
	if n := tc.count([]receiver.IslandView{view(1, k(1, 2, 10), a, b), view(2, k(2, 1, 10), c)}, 1, lookup); n != 1 {
		t.Fatalf("the merged island shown with c on another frame: %d torn, want 1", n)
	}
}
