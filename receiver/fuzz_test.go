package receiver

import (
	"bytes"
	"math"
	"testing"

	"github.com/islandsync/islandsync/codec"
)

// FuzzReceiveV2 drives a hostile wire-2 datagram into a warm receiver — one
// holding the baselines, manifests and leases of 100 snapshots of the
// ragdolls and the chain — between two snapshots of the same run. A
// datagram that starts as one of wire 2 gets its check recomputed, so that
// mutated records reach the parser, the expansion against baselines and the
// commit, not just the check. Nothing may panic, and every island shown
// afterwards has exactly its manifest's members, all finite.
func FuzzReceiveV2(f *testing.F) {
	rec := record(f, "ragdolls,chain", 4, 2)
	for i := rec.warm; i < len(rec.now); i++ {
		for _, d := range rec.dgs[i] {
			f.Add(d)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rx, _ := New(Config{})
		rec.play(rx, 0, rec.warm, false)
		dg := data
		if len(dg) >= codec.V2HeaderSize && bytes.HasPrefix(dg, []byte(codec.Magic)) && dg[4] == codec.VersionV2 {
			dg = resign(bytes.Clone(dg))
		}
		rx.Datagram(rec.now[rec.warm], dg)
		rec.play(rx, rec.warm, len(rec.now), false)
		for _, v := range rx.Render(rec.now[len(rec.now)-1]) {
			man, ok := rx.val.Manifest(v.Island)
			if len(v.Poses) == 0 {
				continue
			}
			if !ok || len(v.Poses) != len(man.Members) {
				t.Fatalf("island %d shows %d members, its manifest has %d", v.Island, len(v.Poses), len(man.Members))
			}
			for i, p := range v.Poses {
				s := p.State
				for _, x := range [...]float64{s.X, s.Y, s.Angle, s.VX, s.VY, s.AngVel} {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("island %d member %d: %+v", v.Island, i, s)
					}
				}
				if p.ID != man.Members[i] {
					t.Fatalf("island %d member %d is %v, the manifest says %v", v.Island, i, p.ID, man.Members[i])
				}
			}
		}
	})
}
