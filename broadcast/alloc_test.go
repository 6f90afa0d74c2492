package broadcast

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// TestFramesAllocs: in steady state a broadcast allocates nothing — 300
// one-body islands moving, three observers confirming every datagram, one
// of them under a byte budget, keyframes coming round every 40 broadcasts
// — once the tables of frames no observer holds any more go back to the
// pool and every observer's datagrams are drained into storage they trade.
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
	for id := ObserverID(1); id <= 3; id++ {
		if err := b.Join(id, 0); err != nil {
			t.Fatal(err)
		}
		if err := b.Subscribe(id, codec.Subscribe{All: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetCap(3, 256); err != nil {
		t.Fatal(err)
	}
	var seq uint32
	var out Out
	step := func() {
		seq++
		for _, f := range frames {
			f.Key.Seq, f.Time = seq, island.Time(seq)*50_000
			f.Members[0].State.X += 0.01
		}
		b.Frames(frames)
		for id := ObserverID(1); id <= 3; id++ {
			b.Drain(id, &out)
			for _, d := range out.Datagrams { // every datagram arrives and is confirmed
				_ = b.Feedback(id, codec.Received{Newest: binary.LittleEndian.Uint32(d.Bytes[5:])})
			}
		}
	}
	for range 300 { // every slot of the senders' rings has been used
		step()
	}
	if a := testing.AllocsPerRun(100, step); a != 0 {
		t.Fatalf("%.1f allocations per broadcast of %d islands", a, n)
	}
	if b.tables.Free() == 0 {
		t.Fatal("no table went back to the pool")
	}
}

// TestDrainIsTake: Drain hands over the same control bytes and datagrams
// as Take, broadcast after broadcast, in storage it trades with the
// caller; a clone taken while datagrams wait keeps them intact though the
// original writes its storage again; an unknown observer drains nothing.
func TestDrainIsTake(t *testing.T) {
	const n = 40
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	frames := make([]*island.Frame, n)
	for i := range frames {
		live(t, b, uint32(i+1), ids(uint64(100*(i+1)), 1+i%3))
		frames[i] = frameOf(uint32(i+1), ids(uint64(100*(i+1)), 1+i%3), 0)
	}
	if err := b.Join(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(1, codec.Subscribe{All: true}); err != nil {
		t.Fatal(err)
	}
	c := b.Clone() // taken from with Take
	var out Out
	var ctl []byte
	var dgs []Datagram
	for seq := uint32(1); seq <= 60; seq++ {
		for _, f := range frames {
			f.Key.Seq, f.Time = seq, island.Time(seq)*50_000
			f.Members[0].State.X += 0.01
		}
		b.Frames(frames)
		c.Frames(frames)
		var kept *Broadcaster
		var keptDgs []Datagram
		if seq%10 == 0 { // a clone of b with datagrams waiting
			kept = b.Clone()
		}
		b.Drain(1, &out)
		ctl, dgs = c.Take(1, ctl[:0], dgs[:0])
		if string(out.Control) != string(ctl) || len(out.Datagrams) != len(dgs) {
			t.Fatalf("broadcast %d: Drain gave %d control bytes and %d datagrams, Take %d and %d",
				seq, len(out.Control), len(out.Datagrams), len(ctl), len(dgs))
		}
		for i := range dgs {
			if string(out.Datagrams[i].Bytes) != string(dgs[i].Bytes) || !slices.Equal(out.Datagrams[i].Islands, dgs[i].Islands) {
				t.Fatalf("broadcast %d: datagram %d differs", seq, i)
			}
		}
		for _, d := range dgs {
			pkt := binary.LittleEndian.Uint32(d.Bytes[5:])
			_ = b.Feedback(1, codec.Received{Newest: pkt})
			_ = c.Feedback(1, codec.Received{Newest: pkt})
		}
		if kept != nil {
			var want [][]byte // what kept holds: this broadcast's datagrams
			for _, d := range dgs {
				want = append(want, slices.Clone(d.Bytes))
			}
			// b writes the storage it traded again on its next broadcasts.
			for range 2 {
				b.Frames(frames)
				b.Drain(1, &out)
				c.Frames(frames) // c keeps up with b
				ctl, dgs = c.Take(1, ctl[:0], dgs[:0])
			}
			_, keptDgs = kept.Take(1, nil, nil)
			for i := range want {
				if string(keptDgs[i].Bytes) != string(want[i]) {
					t.Fatalf("broadcast %d: the clone's waiting datagram %d was overwritten", seq, i)
				}
			}
		}
	}
	b.Drain(9, &out)
	if len(out.Control) != 0 || len(out.Datagrams) != 0 {
		t.Fatal("an unknown observer drained something")
	}
}
