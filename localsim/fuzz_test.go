package localsim_test

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/localsim"
)

// FuzzLocalsim: whatever Physics message a hostile authority sends, and
// whatever finite states its frames carry, building the simulation,
// continuing, bridging and settling never panic; a continuation reported
// done is finite, and settling never leaves a pose that is not.
func FuzzLocalsim(f *testing.F) {
	if b, err := os.ReadFile("../testdata/golden/control/physics.bin"); err == nil {
		f.Add(b, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		big := make([]byte, 8*18)
		for i := range 18 {
			binary.LittleEndian.PutUint64(big[8*i:], math.Float64bits(1e7*float64(i%3)))
		}
		f.Add(b, big)
	}
	lim := codec.ControlLimits{MaxMessage: 1 << 16, MaxMembers: 64, MaxJoints: 64, MaxSegments: 8}.WithDefaults()
	f.Fuzz(func(t *testing.T, msg, raw []byte) {
		m, _, err := codec.ParseControl(msg, &lim)
		if err != nil {
			return
		}
		p, ok := m.(codec.Physics)
		if !ok {
			return
		}
		sim, err := localsim.New(p)
		if err != nil {
			return
		}
		n := len(p.Bodies)
		// Two frames' states from raw: finite (a validated frame's are).
		value := func(k int) float64 {
			if len(raw) < 8 {
				return float64(k % 5)
			}
			off := (8 * k) % (len(raw) - len(raw)%8)
			v := math.Float64frombits(binary.LittleEndian.Uint64(raw[off:]))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0
			}
			return v
		}
		frames := [2][]island.State{make([]island.State, n), make([]island.State, n)}
		for fr := range frames {
			for i := range n {
				k := 6 * (fr*n + i)
				frames[fr][i] = island.State{X: value(k), Y: value(k + 1), Angle: value(k + 2), VX: value(k + 3), VY: value(k + 4), AngVel: value(k + 5)}
			}
		}
		stA := func(i int) island.State { return frames[0][i] }
		stB := func(i int) island.State { return frames[1][i] }
		out := make([]island.State, n)
		finite := func(ss []island.State) bool {
			for _, s := range ss {
				for _, v := range []float64{s.X, s.Y, s.Angle, s.VX, s.VY, s.AngVel} {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						return false
					}
				}
			}
			return true
		}
		ka, kb := island.Key{Island: p.Island, Seq: 1}, island.Key{Island: p.Island, Seq: 3}
		for _, dt := range []int64{1, 16_667, 50_000, 33_333, 100_000} {
			if sim.Continue(ka, 0, stA, dt, 30, out) && !finite(out) {
				t.Fatalf("continuation to %d µs not finite: %+v", dt, out)
			}
		}
		if sim.Bridge(ka, 0, stA, kb, 100_000, stB, 40_000, 30, out) && !finite(out) {
			t.Fatalf("bridge not finite: %+v", out)
		}
		target := sim.Separations(stB, nil)
		poses := append([]island.State(nil), frames[0]...)
		sim.Settle(poses, target)
		if !finite(poses) {
			t.Fatalf("settled poses not finite: %+v", poses)
		}
	})
}
