package broadcast

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

func ids(first uint64, n int) []island.MemberID {
	out := make([]island.MemberID, n)
	for i := range out {
		out[i] = island.MemberID{Stable: first + uint64(i)}
	}
	return out
}

func frameOf(islandID uint32, members []island.MemberID, seq uint32) *island.Frame {
	f := &island.Frame{Sender: 1, Key: island.Key{Island: islandID, Epoch: 1, Topology: 1, Config: 1, Seq: seq}, Time: island.Time(seq) * 50_000}
	for _, id := range members {
		f.Members = append(f.Members, island.Member{ID: id, State: island.State{X: float64(id.Stable)}})
	}
	return f
}

// live applies an island: Announce, Lease, Manifest.
func live(t testing.TB, b *Broadcaster, islandID uint32, members []island.MemberID) {
	t.Helper()
	for _, m := range []codec.Message{codec.Announce{IDs: members}, codec.Lease{Island: islandID, Epoch: 1, Owner: 1},
		codec.Manifest{Island: islandID, Topology: 1, Config: 1, Members: members}} {
		if err := b.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
}

// subscribeAll joins observer id and subscribes it to every island.
func subscribeAll(t testing.TB, b *Broadcaster, id ObserverID) {
	t.Helper()
	if err := b.Join(id, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(id, codec.Subscribe{All: true}); err != nil {
		t.Fatal(err)
	}
}

func parseAll(t testing.TB, b []byte) []codec.Message {
	t.Helper()
	lim := codec.ControlLimits{}.WithDefaults()
	var out []codec.Message
	for len(b) > 0 {
		m, n, err := codec.ParseControl(b, &lim)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		b = b[n:]
	}
	return out
}

func types(ms []codec.Message) string {
	s := ""
	for _, m := range ms {
		s += m.Type().String() + " "
	}
	return s
}

// TestCatchUpBeforeFrames: a late joiner gets Welcome; its subscription
// brings every identity, then Lease and Manifest of each island it
// subscribes to, and only then frames.
func TestCatchUpBeforeFrames(t *testing.T) {
	b, _ := New(Config{Timeline: 42})
	live(t, b, 1, ids(1, 3))
	live(t, b, 9, ids(9, 2))
	if err := b.Join(5, 0); err != nil {
		t.Fatal(err)
	}
	b.Frames([]*island.Frame{frameOf(1, ids(1, 3), 1)})
	ctl, dgs := b.Take(5, nil, nil)
	if got := types(parseAll(t, ctl)); got != "welcome " || len(dgs) != 0 {
		t.Fatalf("before subscribing: %s, %d datagrams", got, len(dgs))
	}
	if err := b.Subscribe(5, codec.Subscribe{All: true}); err != nil {
		t.Fatal(err)
	}
	b.Frames([]*island.Frame{frameOf(1, ids(1, 3), 2), frameOf(9, ids(9, 2), 2), frameOf(33, ids(33, 1), 2)})
	ctl, dgs = b.Take(5, nil, nil)
	msgs := parseAll(t, ctl)
	if got := types(msgs); got != "announce lease manifest lease manifest " {
		t.Fatalf("catch-up: %s", got)
	}
	if len(dgs) != 1 || fmt.Sprint(dgs[0].Islands) != "[1 9]" {
		t.Fatalf("datagrams %+v", dgs)
	}
	if st := b.Stats(); st.FramesUnknown != 1 {
		t.Fatalf("island 33 has no lease or manifest: it must be skipped, stats %+v", st)
	}
	// Unsubscribing island 9 sends its Forget and stops its frames.
	if err := b.Subscribe(5, codec.Subscribe{Islands: []uint32{1}}); err != nil {
		t.Fatal(err)
	}
	b.Frames([]*island.Frame{frameOf(1, ids(1, 3), 3), frameOf(9, ids(9, 2), 3)})
	ctl, dgs = b.Take(5, nil, nil)
	if got := types(parseAll(t, ctl)); got != "forget " || len(dgs) != 1 || fmt.Sprint(dgs[0].Islands) != "[1]" {
		t.Fatalf("after unsubscribing: %s %+v", got, dgs)
	}
}

// TestCatchUpHalfLive: an island whose lease came before an observer's
// subscription and whose manifest came after it (or the other way round)
// reaches the observer whole: the catch-up sends the half held, the other
// half goes live. Without the lease the observer refuses every frame of
// the island for good; without the manifest it cannot read them.
func TestCatchUpHalfLive(t *testing.T) {
	members := ids(1, 3)
	for _, tc := range []struct {
		name          string
		before, after codec.Message
		want          string
	}{
		{"lease first", codec.Lease{Island: 7, Epoch: 1, Owner: 1}, codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: members}, "announce lease manifest "},
		{"manifest first", codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: members}, codec.Lease{Island: 7, Epoch: 1, Owner: 1}, "announce manifest lease "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := New(Config{})
			if err := b.Join(5, 0); err != nil {
				t.Fatal(err)
			}
			for _, m := range []codec.Message{codec.Announce{IDs: members}, tc.before} {
				if err := b.Apply(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Subscribe(5, codec.Subscribe{All: true}); err != nil {
				t.Fatal(err)
			}
			if err := b.Apply(tc.after); err != nil {
				t.Fatal(err)
			}
			b.Frames([]*island.Frame{frameOf(7, members, 1)})
			ctl, dgs := b.Take(5, nil, nil)
			if got := types(parseAll(t, ctl)[1:]); got != tc.want || len(dgs) != 1 {
				t.Fatalf("after the welcome: %s and %d datagrams, want %s and 1", got, len(dgs), tc.want)
			}
			// Leaving the island forgets it; coming back catches it up whole.
			if err := b.Subscribe(5, codec.Subscribe{Islands: []uint32{8}}); err != nil {
				t.Fatal(err)
			}
			if err := b.Subscribe(5, codec.Subscribe{All: true}); err != nil {
				t.Fatal(err)
			}
			ctl, _ = b.Take(5, nil, nil)
			if got := types(parseAll(t, ctl)); got != "forget lease manifest " {
				t.Fatalf("away and back: %s", got)
			}
		})
	}
}

// TestEncodeOnce: on wire 1, observers with the same cap and subscription
// share one encoding and the very same bytes; another cap costs one more
// encoding.
func TestEncodeOnce(t *testing.T) {
	b, _ := New(Config{Wire: 1})
	live(t, b, 1, ids(1, 40))
	for id := ObserverID(1); id <= 3; id++ {
		_ = b.Join(id, 1200)
		_ = b.Subscribe(id, codec.Subscribe{All: true})
	}
	_ = b.Join(4, 576)
	_ = b.Subscribe(4, codec.Subscribe{All: true})
	b.Frames([]*island.Frame{frameOf(1, ids(1, 40), 1)})
	if st := b.Stats(); st.Encodings != 2 {
		t.Fatalf("%d encodings, want 2", st.Encodings)
	}
	_, d1 := b.Take(1, nil, nil)
	_, d2 := b.Take(2, nil, nil)
	_, d4 := b.Take(4, nil, nil)
	if len(d1) != 3 || len(d2) != 3 || &d1[0].Bytes[0] != &d2[0].Bytes[0] {
		t.Fatalf("observers 1 and 2 do not share: %d/%d datagrams", len(d1), len(d2))
	}
	if len(d4) != 5 { // 8 members fit a 576-byte datagram
		t.Fatalf("576-byte observer got %d datagrams, want 5", len(d4))
	}
	for _, d := range d4 {
		if len(d.Bytes) > 576 {
			t.Fatalf("datagram of %d bytes over the observer's cap", len(d.Bytes))
		}
	}
}

func TestLimitsAndErrors(t *testing.T) {
	b, _ := New(Config{MaxObservers: 1, MaxIslands: 1, MaxIdentities: 2})
	if err := b.Join(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Join(1, 0); !errors.Is(err, ErrObserverTaken) {
		t.Fatalf("same id: %v", err)
	}
	if err := b.Join(2, 0); !errors.Is(err, ErrObserverLimit) {
		t.Fatalf("over the cap: %v", err)
	}
	b.Leave(1)
	if err := b.Join(2, 100); err == nil {
		t.Fatal("a 100-byte datagram cap was accepted")
	}
	if err := b.Apply(codec.Announce{IDs: ids(1, 3)}); !errors.Is(err, ErrTableFull) {
		t.Fatalf("identities over the cap: %v", err)
	}
	if err := b.Apply(codec.Lease{Island: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(codec.Lease{Island: 2}); !errors.Is(err, ErrTableFull) {
		t.Fatalf("islands over the cap: %v", err)
	}
	if err := b.Apply(codec.Received{}); !errors.Is(err, ErrDirection) {
		t.Fatalf("received applied: %v", err)
	}
	if err := b.Subscribe(77, codec.Subscribe{All: true}); !errors.Is(err, ErrNoObserver) {
		t.Fatalf("unknown observer: %v", err)
	}
}

// BenchmarkFanOut is the authority's cost of one broadcast — 24 six-body
// islands and one 160-body island — for 1, 8 and 64 observers: one encoding,
// then handing the same datagrams to every observer.
func BenchmarkFanOut(b *testing.B) {
	for _, c := range []struct {
		wire int
		n    int
	}{{1, 1}, {1, 8}, {1, 64}, {3, 1}, {3, 8}, {3, 64}} {
		n := c.n
		b.Run(fmt.Sprintf("wire=%d/observers=%d", c.wire, n), func(b *testing.B) {
			bc, _ := New(Config{Wire: c.wire})
			var frames []*island.Frame
			for k := 0; k < 24; k++ {
				m := ids(uint64(1000+10*k), 6)
				live(b, bc, uint32(1000+10*k), m)
				frames = append(frames, frameOf(uint32(1000+10*k), m, 1))
			}
			chain := ids(1, 400)
			live(b, bc, 1, chain)
			frames = append(frames, frameOf(1, chain, 1))
			for id := ObserverID(1); id <= ObserverID(n); id++ {
				_ = bc.Join(id, 0)
				_ = bc.Subscribe(id, codec.Subscribe{All: true})
			}
			var ctl []byte
			var dgs []Datagram
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bc.Frames(frames)
				for id := ObserverID(1); id <= ObserverID(n); id++ {
					ctl, dgs = bc.Take(id, ctl[:0], dgs[:0])
				}
			}
			b.ReportMetric(float64(len(dgs)), "datagrams/observer")
		})
	}
}

// chainObserver returns a broadcaster configured by cfg with one island of
// 1,500 members (its frames cut into fragments) live and observer 1
// subscribed to everything.
func chainObserver(t testing.TB, cfg Config) (*Broadcaster, []island.MemberID) {
	t.Helper()
	bc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	chain := ids(1, 1500)
	live(t, bc, 1, chain)
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	return bc, chain
}

// fragments decodes datagrams and counts the data fragments and the parity
// records they carry.
func fragments(t testing.TB, dec *codec.Decoder, dgs []Datagram) (data, parity int) {
	t.Helper()
	for _, d := range dgs {
		_, recs, err := dec.Decode(d.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			switch {
			case r.Kind == codec.KindParity:
				parity++
			case r.Fragments > 1:
				data++
			}
		}
	}
	return data, parity
}

// TestParity: a 160-body frame cut into fragments carries DefaultParity
// parity records by default, the configured count when set, none when
// Parity is negative; a count above codec.MaxParity is refused.
func TestParity(t *testing.T) {
	if _, err := New(Config{Parity: codec.MaxParity + 1}); err == nil {
		t.Fatal("parity above the cap accepted")
	}
	dec, _ := codec.NewDecoder(codec.Config{})
	for _, c := range []struct{ cfg, want int }{{0, DefaultParity}, {-1, 0}, {3, 3}} {
		bc, chain := chainObserver(t, Config{Parity: c.cfg})
		bc.Frames([]*island.Frame{frameOf(1, chain, 1)})
		_, dgs := bc.Take(1, nil, nil)
		data, parity := fragments(t, dec, dgs)
		if data < 2 || parity != c.want {
			t.Fatalf("Parity %d: %d data fragments, %d parity records; want %d", c.cfg, data, parity, c.want)
		}
	}
}

// TestPhysicsRefs: an island built like one whose Physics an observer was
// sent gets a PhysicsRef to that description instead, in the catch-up and
// as it comes; a new observer (a new connection) holds nothing, so it gets
// the whole Physics first; a description differing in anything but the
// island, topology and config goes whole.
func TestPhysicsRefs(t *testing.T) {
	b, _ := New(Config{Timeline: 42})
	crate := func(isl uint32, mass float64) codec.Physics {
		return codec.Physics{Island: isl, Topology: 1, Config: 1, Step: 4_167, Iterations: 10, Damping: 1,
			Bodies: []codec.BodyMass{{Mass: mass, Moment: 1, Width: 1, Height: 1}}}
	}
	for isl := uint32(1); isl <= 3; isl++ {
		live(t, b, isl, ids(uint64(10*isl), 1))
		if err := b.Apply(crate(isl, 1)); err != nil {
			t.Fatal(err)
		}
	}
	kinds := func(id ObserverID) string {
		ctl, _ := b.Take(id, nil, nil)
		var got string
		for _, m := range parseAll(t, ctl) {
			switch m := m.(type) {
			case codec.Physics:
				got += fmt.Sprintf("physics %d ", m.Island)
			case codec.PhysicsRef:
				if want := codec.PhysicsDigest(crate(m.Island, 1).Append(nil)); m.Digest != want {
					t.Fatalf("island %d: digest %x, want %x", m.Island, m.Digest, want)
				}
				got += fmt.Sprintf("ref %d ", m.Island)
			}
		}
		return got
	}
	subscribeAll(t, b, 5)
	if got := kinds(5); got != "physics 1 ref 2 ref 3 " {
		t.Fatalf("catch-up: %s", got)
	}
	live(t, b, 4, ids(40, 1))
	if err := b.Apply(crate(4, 1)); err != nil {
		t.Fatal(err)
	}
	live(t, b, 5, ids(50, 1))
	if err := b.Apply(crate(5, 2)); err != nil {
		t.Fatal(err)
	}
	if got := kinds(5); got != "ref 4 physics 5 " {
		t.Fatalf("as they come: %s", got)
	}
	subscribeAll(t, b, 6)
	if got := kinds(6); got != "physics 1 ref 2 ref 3 ref 4 physics 5 " {
		t.Fatalf("a new observer: %s", got)
	}
}

// TestPhysics: an island's Physics message goes to its subscribers after
// its manifest, and to a later subscriber in the catch-up; one that does
// not describe the current manifest is refused, and a new manifest drops
// the old description until its own comes.
func TestPhysics(t *testing.T) {
	b, _ := New(Config{Timeline: 42})
	live(t, b, 1, ids(1, 2))
	phys := codec.Physics{Island: 1, Topology: 1, Config: 1, Step: 4_167, Iterations: 10, Damping: 1,
		Bodies: []codec.BodyMass{{Mass: 1, Moment: 1}, {Mass: 1, Moment: 1}},
		Joints: []codec.JointSpec{{Kind: codec.JointPivot, A: 0, B: 1}}}
	subscribeAll(t, b, 5)
	if err := b.Apply(phys); err != nil {
		t.Fatal(err)
	}
	ctl, _ := b.Take(5, nil, nil)
	if got := types(parseAll(t, ctl)); got != "welcome announce lease manifest physics " {
		t.Fatalf("subscriber: %s", got)
	}
	for _, bad := range []func(*codec.Physics){
		func(p *codec.Physics) { p.Topology = 2 },                          // another manifest
		func(p *codec.Physics) { p.Bodies = p.Bodies[:1]; p.Joints = nil }, // another member count
		func(p *codec.Physics) { p.Island = 3 },                            // no manifest at all
		func(p *codec.Physics) { p.Damping = 0 },                           // what no observer accepts
	} {
		p := phys
		p.Bodies = append([]codec.BodyMass(nil), phys.Bodies...)
		bad(&p)
		if err := b.Apply(p); !errors.Is(err, ErrBadMessage) {
			t.Fatalf("%+v: %v", p, err)
		}
	}
	subscribeAll(t, b, 6)
	ctl, _ = b.Take(6, nil, nil)
	if got := types(parseAll(t, ctl)); got != "welcome announce lease manifest physics " {
		t.Fatalf("late subscriber: %s", got)
	}
	// A new config: the old description no longer holds, and a new
	// subscriber gets the manifest alone until the new Physics comes.
	if err := b.Apply(codec.Manifest{Island: 1, Topology: 1, Config: 2, Members: ids(1, 2)}); err != nil {
		t.Fatal(err)
	}
	subscribeAll(t, b, 7)
	ctl, _ = b.Take(7, nil, nil)
	if got := types(parseAll(t, ctl)); got != "welcome announce lease manifest " {
		t.Fatalf("after a new config: %s", got)
	}
}

// TestFeedbackBytes: an observer's stream applies message by message as
// Feedback applies them; it stops at bytes that are no whole message, or at
// a message Feedback refuses, and says how much it applied.
func TestFeedbackBytes(t *testing.T) {
	b, _ := New(Config{})
	live(t, b, 7, ids(1, 3))
	if err := b.Join(1, 0); err != nil {
		t.Fatal(err)
	}
	stream := codec.Subscribe{All: true}.Append(nil)
	stream = codec.Keyframes{Islands: []uint32{7}}.Append(stream)
	whole := len(stream)
	held := codec.Received{Newest: 4, Prior: 1}.Append(nil)
	n, err := b.FeedbackBytes(1, append(stream, held[:7]...))
	if n != whole || !errors.Is(err, codec.ErrTruncated) {
		t.Fatalf("truncated tail: applied %d of %d, %v", n, whole, err)
	}
	if ctl, _ := b.Take(1, nil, nil); !strings.Contains(types(parseAll(t, ctl)), "manifest") {
		t.Fatalf("subscribe not applied: %s", types(parseAll(t, ctl)))
	}
	wrong := codec.Lease{Island: 7, Epoch: 1, Owner: 1}.Append(nil)
	if n, err := b.FeedbackBytes(1, append(held, wrong...)); n != len(held) || !errors.Is(err, ErrDirection) {
		t.Fatalf("authority message from an observer: applied %d, %v", n, err)
	}
	if n, err := b.FeedbackBytes(2, held); n != 0 || !errors.Is(err, ErrNoObserver) {
		t.Fatalf("unknown observer: applied %d, %v", n, err)
	}
	if n, err := b.FeedbackBytes(1, []byte{1, 0, 0, 0, 0x7f}); n != 0 || !errors.Is(err, codec.ErrUnknownType) {
		t.Fatalf("unknown type: applied %d, %v", n, err)
	}
}

// TestRestrict: an observer restricted to islands (a connect token that
// lists them) sees only those, whatever it subscribes to: All becomes the
// list, a list is cut to it, and restricting a live subscription forgets
// what falls outside.
func TestRestrict(t *testing.T) {
	b, _ := New(Config{Timeline: 1})
	live(t, b, 1, ids(1, 2))
	live(t, b, 2, ids(3, 2))
	live(t, b, 3, ids(5, 2))
	subscribeAll(t, b, 5)
	_, _ = b.Take(5, nil, nil)
	if err := b.Restrict(5, []uint32{2, 3}); err != nil {
		t.Fatal(err)
	}
	ctl, _ := b.Take(5, nil, nil)
	if got := types(parseAll(t, ctl)); got != "forget " {
		t.Fatalf("restricting: %s", got)
	}
	if err := b.Subscribe(5, codec.Subscribe{Islands: []uint32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(5, codec.Subscribe{All: true}); err != nil {
		t.Fatal(err)
	}
	b.Frames([]*island.Frame{frameOf(1, ids(1, 2), 1), frameOf(2, ids(3, 2), 1), frameOf(3, ids(5, 2), 1)})
	ctl, dgs := b.Take(5, nil, nil)
	// [1, 2] is cut to [2] (island 3 forgotten), All to [2, 3] (3 back).
	msgs := parseAll(t, ctl)
	if got := types(msgs); got != "forget lease manifest " || msgs[0].(codec.Forget).Island != 3 || msgs[1].(codec.Lease).Island != 3 {
		t.Fatalf("after subscribing [1 2], then all: %s %+v", got, msgs)
	}
	for _, d := range dgs {
		for _, isl := range d.Islands {
			if isl == 1 {
				t.Fatalf("island 1 was sent: %+v", dgs)
			}
		}
	}
	if err := b.Restrict(99, nil); !errors.Is(err, ErrNoObserver) {
		t.Fatalf("unknown observer: %v", err)
	}
}

// TestForgottenIslandStopsAtOnce: an island forgotten between two
// broadcasts is not sent in the second, though its frame comes in the very
// place of the first broadcast's frames, and comes back once it is live
// again.
func TestForgottenIslandStopsAtOnce(t *testing.T) {
	b, _ := New(Config{})
	m := ids(1, 2)
	live(t, b, 7, m)
	subscribeAll(t, b, 1)
	sent := func(seq uint32) (bool, uint64) {
		before := b.Stats().FramesUnknown
		b.Frames([]*island.Frame{frameOf(7, m, seq)})
		_, dgs := b.Take(1, nil, nil)
		return len(dgs) > 0, b.Stats().FramesUnknown - before
	}
	if ok, _ := sent(1); !ok {
		t.Fatal("the live island was not sent")
	}
	if err := b.Apply(codec.Forget{Island: 7}); err != nil {
		t.Fatal(err)
	}
	if ok, unknown := sent(2); ok || unknown != 1 {
		t.Fatalf("after Forget: sent %v, %d frames of unknown islands", ok, unknown)
	}
	live(t, b, 7, m)
	if ok, _ := sent(3); !ok {
		t.Fatal("live again, the island was not sent")
	}
}

// TestResubscribedIslandGoesWhole: an observer that unsubscribes from an
// island drops its baselines of it, so when it subscribes again the
// island's next frame to it is a keyframe, never a delta against what it
// dropped — even though that frame comes in the very place of the last one.
func TestResubscribedIslandGoesWhole(t *testing.T) {
	b, _ := New(Config{})
	m := ids(1, 2)
	live(t, b, 7, m)
	subscribeAll(t, b, 1)
	kind := func(seq uint32) codec.RecordKind { return sendMoving(t, b, frameOf(7, m, seq)) }
	for seq := uint32(1); seq <= 3; seq++ {
		kind(seq)
	}
	if k := kind(4); k != codec.KindDelta {
		t.Fatalf("setup: frame 4 is %v, want a delta", k)
	}
	if err := b.Subscribe(1, codec.Subscribe{Islands: []uint32{8}}); err != nil {
		t.Fatal(err)
	}
	b.Frames([]*island.Frame{frameOf(7, m, 5)}) // not for this observer now
	b.Take(1, nil, nil)
	if err := b.Subscribe(1, codec.Subscribe{All: true}); err != nil {
		t.Fatal(err)
	}
	if k := kind(6); k != codec.KindKey {
		t.Fatalf("after subscribing again, frame 6 is %v, want a keyframe", k)
	}
}

// TestSegmentChangeGoesWhole: a frame that starts a new continuity segment
// (a teleport) goes whole, even when a baseline of the old segment is held:
// a delta across the cut would interpolate through it.
func TestSegmentChangeGoesWhole(t *testing.T) {
	b, _ := New(Config{})
	m := ids(1, 2)
	live(t, b, 7, m)
	subscribeAll(t, b, 1)
	kind := func(seq, segment uint32) codec.RecordKind {
		f := frameOf(7, m, seq)
		f.Segment = segment
		return sendMoving(t, b, f)
	}
	for seq := uint32(1); seq <= 3; seq++ {
		kind(seq, 0)
	}
	if k := kind(4, 0); k != codec.KindDelta {
		t.Fatalf("setup: frame 4 is %v, want a delta", k)
	}
	if k := kind(5, 1); k != codec.KindKey {
		t.Fatalf("the first frame of segment 1 is %v, want a keyframe", k)
	}
	if k := kind(6, 1); k != codec.KindDelta {
		t.Fatalf("the next one is %v, want a delta against it", k)
	}
}

// sendMoving broadcasts f, moved by its sequence so that it is never a
// prediction, to observer 1 in one datagram, confirms that datagram, and
// returns the kind of record f went as.
func sendMoving(t *testing.T, b *Broadcaster, f *island.Frame) codec.RecordKind {
	t.Helper()
	f.Members[0].State.X += float64(f.Key.Seq)
	b.Frames([]*island.Frame{f})
	_, dgs := b.Take(1, nil, nil)
	if len(dgs) != 1 {
		t.Fatalf("frame %d went in %d datagrams", f.Key.Seq, len(dgs))
	}
	dec, _ := codec.NewDecoder(codec.Config{})
	h, recs, err := dec.Decode(dgs[0].Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.FeedbackBytes(1, codec.Received{Newest: h.Packet}.Append(nil)); err != nil {
		t.Fatal(err)
	}
	return recs[0].Kind
}

// TestFinal: a Final (an island's last state under its lease, ahead of
// the lease that hands it on) goes to the island's subscribers, in order
// with the island's other control, and not to a later subscriber (it is
// an event); one whose members are not the manifest's is refused.
func TestFinal(t *testing.T) {
	b, _ := New(Config{Timeline: 42})
	live(t, b, 1, ids(1, 2))
	subscribeAll(t, b, 5)
	members := []island.Member{{ID: island.MemberID{Stable: 1}}, {ID: island.MemberID{Stable: 2}, State: island.State{X: 1}}}
	for _, m := range []codec.Message{codec.Final{Island: 1, Time: 50_000, Members: members}, codec.Lease{Island: 1, Epoch: 2, Owner: 2}} {
		if err := b.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	ctl, _ := b.Take(5, nil, nil)
	if got := types(parseAll(t, ctl)); got != "welcome announce lease manifest final lease " {
		t.Fatalf("subscriber: %s", got)
	}
	for _, bad := range []codec.Final{{Island: 1, Members: members[:1]}, {Island: 3, Members: members}} {
		if err := b.Apply(bad); !errors.Is(err, ErrBadMessage) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	subscribeAll(t, b, 6)
	ctl, _ = b.Take(6, nil, nil)
	if got := types(parseAll(t, ctl)); got != "welcome announce lease manifest " {
		t.Fatalf("late subscriber: %s", got)
	}
}
