package baseline

import (
	"errors"
	"reflect"
	"testing"

	"github.com/islandsync/islandsync/island"
)

// FuzzWindow drives an honest sender and a receiver through a lossy,
// reordering, duplicating channel with operations read from the input, and
// checks: every table the receiver restores is exactly the one the sender
// coded; the receiver never lacks a baseline the sender referenced (the
// sender references only acknowledged tables); the window never holds more
// than Slots tables and its generation never goes back.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{0, 1, 0, 3, 0, 1, 3, 0, 1, 3, 4})
	f.Add([]byte{0, 0, 0, 0, 1, 1, 2, 1, 3, 3, 3, 5, 1, 0, 1, 4, 4})
	seed := make([]byte, 0, 400)
	for i := 0; i < 100; i++ {
		seed = append(seed, 0, 1, 3, 4)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, ops []byte) {
		s, r := NewSender(), NewReceiver(0)
		sent := map[uint32]*Table{}
		world := &Table{Entries: []Entry{{ID: idA}, {ID: idB}}}
		var packets []*Packet
		type ack struct{ gen, id uint32 }
		var acks []ack
		var ctls []Control
		nextID := uint32(1)
		gen := r.Gen()
		decode := func(p *Packet) {
			got, stored, err := r.Decode(p)
			switch {
			case err == nil:
				if want := sent[p.ID]; !reflect.DeepEqual(got.Entries, want.Entries) {
					t.Fatalf("packet %d restored a different table", p.ID)
				}
				if stored {
					acks = append(acks, ack{r.Gen(), p.ID})
				}
				if r.Full() {
					if keep, ok := r.Anchor(); ok {
						if c, ok := s.Advance(keep); ok {
							ctls = append(ctls, c)
						}
					}
				}
			case errors.Is(err, ErrNoBaseline), errors.Is(err, ErrDigest), errors.Is(err, ErrMalformed):
				t.Fatalf("packet %d: %v", p.ID, err)
			}
		}
		for i := 0; i < len(ops); i++ {
			arg := 0
			if i+1 < len(ops) {
				arg = int(ops[i+1])
			}
			switch ops[i] % 6 {
			case 0: // the world moves; a packet is coded and sent
				next := &Table{ID: nextID, Entries: append([]Entry(nil), world.Entries...)}
				next.Entries[arg%2].Q.X += int64(arg) - 100
				next.Entries[arg%2].Time = island.Time(nextID)
				world = next
				base, _ := s.Baseline()
				packets = append(packets, packetFor(base, next, s.Gen()))
				s.Sent(next)
				sent[nextID] = next
				nextID++
			case 1, 5: // deliver one (5: keep a duplicate in flight)
				if len(packets) > 0 {
					k := arg % len(packets)
					p := packets[k]
					if ops[i]%6 == 1 {
						packets = append(packets[:k], packets[k+1:]...)
					}
					decode(p)
				}
			case 2: // lose one
				if len(packets) > 0 {
					k := arg % len(packets)
					packets = append(packets[:k], packets[k+1:]...)
				}
			case 3: // an acknowledgement arrives
				if len(acks) > 0 {
					a := acks[0]
					acks = acks[1:]
					s.Ack(a.gen, a.id)
				}
			case 4: // the window control arrives (reliable, in order)
				if len(ctls) > 0 {
					c := ctls[0]
					ctls = ctls[1:]
					ready, err := r.Commit(c)
					if err != nil {
						t.Fatalf("commit %+v: %v", c, err)
					}
					s.Confirmed(r.Gen())
					for k := range ready {
						decode(&ready[k])
					}
				}
			}
			if len(r.Held()) > Slots {
				t.Fatalf("%d tables held", len(r.Held()))
			}
			if r.Gen() != gen && island.SeqNewer(gen, r.Gen()) {
				t.Fatal("the window went back")
			}
			gen = r.Gen()
		}
	})
}
