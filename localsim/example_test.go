package localsim_test

import (
	"fmt"
	"math"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/localsim"
)

// An island of two 1 m links, the first hung from a world point at the
// origin, both lying along x at rest. A tenth of a second past that frame
// the simulation has them falling and swinging, still hinged; a blended
// view knocked 5 cm off its joints is settled back onto them.
func Example() {
	desc := codec.Physics{Island: 7, Topology: 1, Config: 1, Step: 4_167, Iterations: 30, Gravity: [2]float64{0, -9.8}, Damping: 1,
		Bodies: []codec.BodyMass{{Mass: 1, Moment: 1.0 / 12}, {Mass: 1, Moment: 1.0 / 12}},
		Joints: []codec.JointSpec{
			{Kind: codec.JointPivot, A: 0, B: codec.NoBody, AnchorA: [2]float64{-0.5, 0}, AnchorB: [2]float64{0, 0}},
			{Kind: codec.JointPivot, A: 0, B: 1, AnchorA: [2]float64{0.5, 0}, AnchorB: [2]float64{-0.5, 0}},
		}}
	sim, err := localsim.New(desc)
	if err != nil {
		fmt.Println(err)
		return
	}
	frame := []island.State{{X: 0.5}, {X: 1.5}} // as the newest frame has them
	state := func(i int) island.State { return frame[i] }
	key := island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1, Seq: 40}

	out := make([]island.State, 2)
	sim.Continue(key, 2_000_000, state, 100_000, 0, out) // 100 ms past the frame
	worst := 0.0
	for _, e := range sim.JointErrors(func(i int) island.State { return out[i] }, nil) {
		worst = math.Max(worst, e)
	}
	fmt.Printf("link 2 fell: %v, joints within 1 mm: %v\n", out[1].Y < -0.01, worst < 0.001)

	target := sim.Separations(state, nil) // the joints as the frame has them
	view := []island.State{{X: 0.55}, {X: 1.45, Y: 0.05}}
	sim.Settle(view, target)
	worst = 0
	for _, e := range sim.JointErrors(func(i int) island.State { return view[i] }, nil) {
		worst = math.Max(worst, e)
	}
	fmt.Printf("settled view within 0.1 mm of its joints: %v\n", worst < 1e-4)
	// Output:
	// link 2 fell: true, joints within 1 mm: true
	// settled view within 0.1 mm of its joints: true
}
