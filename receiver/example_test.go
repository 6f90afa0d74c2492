package receiver_test

import (
	"fmt"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
)

// An engine embeds the receive path: control messages in stream order,
// datagrams as they come, and one Render per tick that hands out whole
// islands. The authority here is in-process; over a network the same bytes
// arrive on a control stream and as datagrams.
func Example() {
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20) // the bridge
	bc, _ := broadcast.New(broadcast.Config{SendPeriod: auth.Period()})
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	var ctl, fb []byte
	var dgs []broadcast.Datagram

	// The engine side.
	rx, _ := receiver.New(receiver.Config{})
	pose := map[uint64][2]float64{} // the engine's bodies, by stable id
	for step := int64(1); step <= 120; step++ {
		now := step * 1_000_000 / 60 // µs, the engine's monotonic clock
		msgs, frames := auth.Step()
		for _, m := range msgs {
			_ = bc.Apply(m)
		}
		bc.Frames(frames)
		ctl, dgs = bc.Take(1, ctl[:0], dgs[:0])
		if _, err := rx.ControlBytes(now, ctl); err != nil { // the reliable control stream, in order
			panic(err) // the authority broke the protocol: drop the connection
		}
		for _, d := range dgs {
			rx.Datagram(now, d.Bytes)
		}
		for _, v := range rx.Render(now) { // every member from one frame pair
			for _, p := range v.Poses {
				pose[p.ID.Stable] = [2]float64{p.State.X, p.State.Y}
			}
		}
		// Back on the control stream (every 50–100 ms will do): keyframe
		// requests and the datagrams that arrived, which let the
		// authority send deltas.
		fb = rx.Feedback(fb[:0])
		if _, err := bc.FeedbackBytes(1, fb); err != nil {
			panic(err)
		}
	}
	st := rx.Stats()
	fmt.Printf("islands %d, bodies shown %d, frames committed %d\n", len(rx.Islands()), len(pose), st.FramesCommitted)
	// Output:
	// islands 1, bodies shown 40, frames committed 41
}
