package validator

import (
	"fmt"
	"testing"

	"github.com/islandsync/islandsync/island"
)

// BenchmarkValidate: one frame of n members, in manifest order, every
// identity cached — the steady state — per member.
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1, 160} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			fx := newFixture(b, n)
			w := wireFrame(fx.frame)
			b.ReportAllocs()
			for b.Loop() {
				if r, _ := fx.v.Validate(w); r != OK {
					b.Fatal(r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
		})
	}
}

// BenchmarkValidateStates: the same frames given as identities and states.
func BenchmarkValidateStates(b *testing.B) {
	for _, n := range []int{1, 160} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			fx := newFixture(b, n)
			h := Header{Sender: fx.frame.Sender, Key: fx.frame.Key, Time: fx.frame.Time}
			ids, sts := make([]island.MemberID, n), make([]island.State, n)
			for i, m := range fx.frame.Members {
				ids[i], sts[i] = m.ID, m.State
			}
			b.ReportAllocs()
			for b.Loop() {
				if r, _ := fx.v.ValidateStates(h, ids, sts); r != OK {
					b.Fatal(r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
		})
	}
}
