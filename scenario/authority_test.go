package scenario

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
)

// TestAuthorityRestart: the first step announces every body and states
// every island; a restart destroys and forgets them and brings the worlds
// back with fresh ids on the same, still advancing, timeline.
func TestAuthorityRestart(t *testing.T) {
	if _, err := NewAuthority(All, 0); err == nil {
		t.Fatal("0 Hz accepted")
	}
	if _, err := NewAuthority(All, StepHz+1); err == nil {
		t.Fatal("a rate above the step rate accepted")
	}
	a, err := NewAuthority(All, 20)
	if err != nil {
		t.Fatal(err)
	}
	count := func(ms []codec.Message) map[codec.MessageType]int {
		c := map[codec.MessageType]int{}
		for _, m := range ms {
			c[m.Type()]++
		}
		return c
	}
	ctl, frames := a.Step()
	c := count(ctl)
	islands := 0
	for _, w := range a.Worlds() {
		islands += len(w.Islands())
	}
	if c[codec.TypeAnnounce] != 1 || c[codec.TypeLease] != islands || c[codec.TypeManifest] != islands || len(frames) != islands {
		t.Fatalf("first step: %v, %d frames, %d islands", c, len(frames), islands)
	}
	first := ctl[0].(codec.Announce).IDs
	before := a.Time()
	a.Restart()
	ctl, _ = a.Step()
	c = count(ctl)
	if c[codec.TypeForget] != islands || c[codec.TypeDestroy] != 1 || c[codec.TypeAnnounce] != 1 {
		t.Fatalf("restart: %v", c)
	}
	var again []codec.Message
	for _, m := range ctl {
		if m.Type() == codec.TypeAnnounce {
			again = append(again, m)
		}
	}
	ids := again[0].(codec.Announce).IDs
	if len(ids) != len(first) || ids[0] == first[0] {
		t.Fatalf("restart reused identities: %v vs %v", ids[0], first[0])
	}
	if a.Time() <= before {
		t.Fatalf("time went back: %d after %d", a.Time(), before)
	}
}
