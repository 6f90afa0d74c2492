package baseline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// keptModel is the window rule written plainly: sequences ascending in a
// slice, the newest kept whatever its age, an anchor kept until its next
// newer frame is Slack broadcasts old, at most MaxKept.
type keptModel []uint32

func (m *keptModel) keep(id, newest uint32) bool {
	s := *m
	i := len(s)
	for i > 0 && island.SeqNewer(s[i-1], id) {
		i--
	}
	if i > 0 && s[i-1] == id {
		return false
	}
	s = slices.Insert(s, i, id)
	*m = s
	m.prune(newest)
	if len(*m) > MaxKept {
		*m = (*m)[1:]
	}
	return slices.Contains(*m, id)
}

func (m *keptModel) prune(newest uint32) {
	s := *m
	n := 0
	for n < len(s)-1 && expired(s[n], newest) && superseded(s[n+1], newest) {
		n++
	}
	*m = s[n:]
}

// TestKeptModel drives Kept and the plain model through the same seeded
// stream — frames mostly in order, some late, some duplicated, jumps far
// ahead, sequences across the 32-bit wrap, pruning between — and requires
// the same answers and the same tables after every step: the ring holds
// exactly what the rule keeps, in order, up to its cap (which frames
// sequenced ahead of the newest broadcast seen reach).
func TestKeptModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var k Kept
		var m keptModel
		newest := uint32(1<<32 - 500) // wraps within the run
		for step := range 5000 {
			var id uint32
			switch r := rng.IntN(100); {
			case r < 70: // the next broadcast
				newest++
				id = newest
			case r < 85: // late by up to twice the window
				id = newest - uint32(rng.IntN(2*Window))
			case r < 90: // a jump far ahead
				newest += uint32(rng.IntN(4 * Window))
				id = newest
			case r < 93: // the same frame again
				id = newest
			case r < 95: // ahead of the newest broadcast seen: only the cap bounds these
				id = newest + uint32(rng.IntN(3*Window))
			default:
				newest += uint32(rng.IntN(Window))
				k.Prune(newest)
				m.prune(newest)
				continue
			}
			tb := k.NewTable()
			tb.ID = id
			got, want := k.Keep(tb, newest), m.keep(id, newest)
			if got != want {
				t.Fatalf("seed %d step %d: Keep(%d, newest %d) = %v, the rule says %v", seed, step, id, newest, got, want)
			}
			var held []uint32
			for i := range k.n {
				held = append(held, k.tables[k.slot(i)].ID)
				if k.ids[k.slot(i)] != held[i] {
					t.Fatalf("seed %d step %d: slot %d says %d, its table %d", seed, step, i, k.ids[k.slot(i)], held[i])
				}
			}
			if !slices.Equal(held, m) || k.Len() != len(m) {
				t.Fatalf("seed %d step %d: held %v, the rule keeps %v", seed, step, held, m)
			}
			for _, s := range m {
				if f := k.Find(s); f == nil || f.ID != s {
					t.Fatalf("seed %d step %d: Find(%d) = %v", seed, step, s, f)
				}
			}
			if len(m) > 0 && k.Newest().ID != m[len(m)-1] {
				t.Fatalf("seed %d step %d: newest %d, want %d", seed, step, k.Newest().ID, m[len(m)-1])
			}
		}
	}
}

// TestKeptArenaModel is TestKeptModel for islands that keep one-member
// frames with KeepFrame in one shared arena, some of them as caps let it
// (a small MaxTables, slots still held), the rest in tables of their own:
// after every step each island holds what the rule keeps, every table it
// holds has the members of its own frame (no table of the arena was handed
// out twice while kept, none was overwritten), and the arena counts as
// live exactly the tables the islands hold of it. Islands are forgotten
// (Clear) and the whole arena reset, as a receiver does.
func TestKeptArenaModel(t *testing.T) {
	const islands = 5
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var a Arena
		if seed%2 == 1 {
			a.MaxTables = 1 + rng.IntN(islands) // runs fill up: some islands keep tables of their own
		}
		var ks [islands]Kept
		var ms [islands]keptModel
		newest := uint32(1<<32 - 300)
		inArena := 0
		for step := range 4000 {
			i := rng.IntN(islands)
			k, m := &ks[i], &ms[i]
			var pruned [islands]bool // pruned at newest by this step: no table of the arena out of the window left
			var id uint32
			switch r := rng.IntN(100); {
			case r < 55:
				newest++
				id = newest
			case r < 70: // another island's frame of the same broadcast
				id = newest
			case r < 82:
				id = newest - uint32(rng.IntN(2*Window))
			case r < 86:
				newest += uint32(rng.IntN(4 * Window))
				id = newest
			case r < 88:
				id = newest + uint32(rng.IntN(3*Window))
			case r < 96:
				newest += uint32(rng.IntN(Slack))
				for j := range ks {
					ks[j].Prune(newest)
					ms[j].prune(newest)
					pruned[j] = true
				}
				id = 0
			case r < 99: // the island is forgotten
				k.Clear()
				*m = nil
				id = 0
			default: // every island is forgotten at once
				ks = [islands]Kept{}
				ms = [islands]keptModel{}
				a.Reset()
				id = 0
			}
			if id != 0 {
				ents := []Entry{{ID: island.MemberID{Stable: uint64(i)}, Record: Record{Q: quant.State{X: int64(id)}}}}
				f := FrameInfo{Key: island.Key{Island: uint32(i), Seq: id}}
				pruned[i] = !slices.Contains(*m, id) // a frame held already is refused before any pruning
				got, want := k.KeepFrame(&a, &f, ents, newest), m.keep(id, newest)
				if got != want {
					t.Fatalf("seed %d step %d: island %d KeepFrame(%d, newest %d) = %v, the rule says %v", seed, step, i, id, newest, got, want)
				}
				ents[0].Q.X = -1
			}
			inArena = 0
			for j := range ks {
				k, m := &ks[j], ms[j]
				var held []uint32
				for n := range k.n {
					s := k.slot(n)
					tb := k.tables[s]
					held = append(held, tb.ID)
					if k.ids[s] != tb.ID || len(tb.Entries) != 1 || tb.Entries[0].Q.X != int64(tb.ID) || tb.Entries[0].ID.Stable != uint64(j) || tb.Frame.Key.Seq != tb.ID {
						t.Fatalf("seed %d step %d: island %d slot %d says %d, its table %+v", seed, step, j, n, k.ids[s], tb)
					}
					if k.isArena(s) {
						inArena++
						if pruned[j] && expired(tb.ID, newest) {
							t.Fatalf("seed %d step %d: island %d, pruned at %d, holds frame %d of the arena", seed, step, j, newest, tb.ID)
						}
					}
				}
				if !slices.Equal(held, []uint32(m)) {
					t.Fatalf("seed %d step %d: island %d holds %v, the rule keeps %v", seed, step, j, held, m)
				}
			}
			if live := a.Live(); live != inArena {
				t.Fatalf("seed %d step %d: the arena counts %d tables live, the islands hold %d", seed, step, live, inArena)
			}
		}
		if inArena == 0 && seed == 0 {
			t.Fatalf("seed %d: no table of the arena held at the end", seed)
		}
	}
}
