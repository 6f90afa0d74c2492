package store

import (
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

// world is a validator + store for one island (7, owner s3, epoch 2,
// topology 5, config 1) of n members.
type world struct {
	v     *validator.Validator
	s     *Store
	man   island.Manifest
	lease island.Lease
	seq   uint32
}

func newWorld(t testing.TB, n int, cfg Config) *world {
	reg := validator.NewRegistry(0, 0)
	w := &world{v: validator.New(reg, validator.Config{}), man: island.Manifest{Island: 7, Topology: 5, Config: 1},
		lease: island.Lease{Island: 7, Epoch: 2, Owner: 3}}
	for i := 0; i < n; i++ {
		id := island.MemberID{Stable: uint64(i + 1)}
		w.man.Members = append(w.man.Members, id)
		if _, err := reg.Announce(id); err != nil {
			t.Fatal(err)
		}
	}
	w.v.SetLease(w.lease)
	if err := w.v.SetManifest(w.man); err != nil {
		t.Fatal(err)
	}
	w.s = New(cfg, w.v)
	return w
}

// frame builds the island's frame at authority time t with every member's
// state given by st(i).
func (w *world) frame(t island.Time, segment uint32, st func(i int) island.State) island.Frame {
	w.seq++
	f := island.Frame{Sender: w.lease.Owner, Time: t, Segment: segment,
		Key: island.Key{Island: 7, Epoch: w.lease.Epoch, Topology: w.man.Topology, Config: w.man.Config, Seq: w.seq}}
	for i, id := range w.man.Members {
		f.Members = append(f.Members, island.Member{ID: id, State: st(i)})
	}
	return f
}

func wire(f island.Frame) *assembler.Frame {
	var raw []byte
	for i := range f.Members {
		raw = codec.AppendMember(raw, &f.Members[i])
	}
	return &assembler.Frame{Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags, Members: raw}
}

// commit validates and commits f at local time now.
func (w *world) commit(t testing.TB, now int64, f island.Frame) {
	t.Helper()
	r, vf := w.v.Validate(wire(f))
	if r != validator.OK {
		t.Fatalf("validate: %v", r)
	}
	if c := w.s.Commit(now, vf); c != Committed {
		t.Fatalf("commit: %v", c)
	}
}
