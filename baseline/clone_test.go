package baseline

import (
	"testing"

	"github.com/islandsync/islandsync/island"
)

// TestReceiverClone: a cloned window holds the same tables, and what
// either side stores, advances or changes afterwards leaves the other as it
// was.
func TestReceiverClone(t *testing.T) {
	r := NewReceiver(0)
	for id := uint32(40); id < 43; id++ {
		tb := r.NewTable()
		tb.ID = id
		tb.Entries = append(tb.Entries, Entry{ID: island.MemberID{Stable: 1}, Record: Record{Time: island.Time(id)}})
		if !r.Store(0, tb) {
			t.Fatalf("store %d", id)
		}
	}
	c := r.Clone()
	got, err := c.Lookup(0, 41)
	if err != nil || got.Entries[0].Time != 41 {
		t.Fatalf("the clone lacks table 41: %v", err)
	}
	got.Entries[0].Time = 999 // the clone's own table
	if orig, _ := r.Lookup(0, 41); orig.Entries[0].Time != 41 {
		t.Fatal("changing the clone's table changed the original's")
	}
	if _, err := r.Commit(Control{Gen: 1, Keep: []uint32{42}}); err != nil {
		t.Fatal(err)
	}
	if c.Gen() != 0 {
		t.Fatal("advancing the original advanced the clone")
	}
	if _, err := c.Lookup(0, 40); err != nil {
		t.Fatalf("the clone lost table 40 when the original released it: %v", err)
	}
}
