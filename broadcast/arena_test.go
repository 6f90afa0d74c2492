package broadcast

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// TestTableArena: tables come from shared chunks, yet each table's members
// are its own — growing one never writes into the next — and a big frame
// gets storage of its own.
func TestTableArena(t *testing.T) {
	var a tableArena
	t1, t2 := a.table(2), a.table(3)
	t2.Entries[0].ID = island.MemberID{Stable: 7}
	t1.Entries = append(t1.Entries, t1.Entries[0])
	if t2.Entries[0].ID.Stable != 7 || len(t1.Entries) != 3 || len(t2.Entries) != 3 {
		t.Fatalf("a table grew into its neighbour: %+v", t2.Entries[0])
	}
	big := a.table(entryChunk)
	if len(big.Entries) != entryChunk || cap(a.entries)-len(a.entries) < entryChunk-5-1 {
		t.Fatalf("a big frame took %d members from the chunk", entryChunk-(cap(a.entries)-len(a.entries)))
	}
}

// TestFramesAllocs: broadcasting 300 one-body islands to an observer
// allocates a few chunks per broadcast (35), not a table and its members per
// island (600 objects).
func TestFramesAllocs(t *testing.T) {
	const n = 300
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	frames := make([]*island.Frame, n)
	for i := range frames {
		live(t, b, uint32(i+1), ids(uint64(100*(i+1)), 1))
		frames[i] = frameOf(uint32(i+1), ids(uint64(100*(i+1)), 1), 0)
	}
	if err := b.Join(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(1, codec.Subscribe{All: true}); err != nil {
		t.Fatal(err)
	}
	var seq uint32
	var ctl []byte
	var dgs []Datagram
	step := func() {
		seq++
		for _, f := range frames {
			f.Key.Seq, f.Time = seq, island.Time(seq)*50_000
			f.Members[0].State.X += 0.01
		}
		b.Frames(frames)
		ctl, dgs = b.Take(1, ctl[:0], dgs[:0])
	}
	for range 50 {
		step()
	}
	if a := testing.AllocsPerRun(20, step); a > 60 {
		t.Fatalf("%.0f allocations per broadcast of %d islands", a, n)
	}
}
