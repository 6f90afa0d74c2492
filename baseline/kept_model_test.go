package baseline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/island"
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
