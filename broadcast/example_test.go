package broadcast_test

import (
	"fmt"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
)

// The default wire, end to end: an authority's Broadcaster and an
// observer's Receiver, the control stream and the datagrams delivered at
// once, and the observer's feedback going back after every broadcast. The
// first frame goes whole; once the observer has confirmed the datagram
// that carried it, the next is coded against it — here a run, since one
// body moves at its constant velocity and the other is at rest, so both
// are exactly where the baseline's motion predicts.
func Example() {
	bc, _ := broadcast.New(broadcast.Config{Timeline: 1, SendPeriod: 50_000})
	rx, _ := receiver.New(receiver.Config{})
	ids := []island.MemberID{{Stable: 1}, {Stable: 2}}
	for _, m := range []codec.Message{codec.Announce{IDs: ids}, codec.Lease{Island: 7, Epoch: 1, Owner: 1},
		codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: ids}} {
		_ = bc.Apply(m)
	}
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	dec, _ := codec.NewDecoder(codec.Config{})
	kinds := map[codec.RecordKind]string{codec.KindKey: "key", codec.KindDelta: "delta", codec.KindRun: "run"}
	var fb []byte
	for seq := uint32(1); seq <= 4; seq++ {
		t := island.Time(seq) * 50_000
		bc.Frames([]*island.Frame{{Sender: 1, Key: island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1, Seq: seq}, Time: t,
			Members: []island.Member{{ID: ids[0], State: island.State{X: float64(seq) * 0.125, VX: 2.5}}, {ID: ids[1], State: island.State{X: 5}}}}})
		ctl, dgs := bc.Take(1, nil, nil)
		if _, err := rx.ControlBytes(int64(t), ctl); err != nil {
			panic(err)
		}
		for _, d := range dgs {
			h, recs, _ := dec.Decode(d.Bytes)
			fmt.Printf("broadcast %d: datagram %d, a %s record, %d bytes\n", h.Seq, h.Packet, kinds[recs[0].Kind], len(d.Bytes))
			rx.Datagram(int64(t), d.Bytes)
		}
		fb = rx.Feedback(fb[:0]) // Received: the datagrams that arrived
		if _, err := bc.FeedbackBytes(1, fb); err != nil {
			panic(err)
		}
	}
	fmt.Println("frames committed:", rx.Stats().FramesCommitted)
	// Output:
	// broadcast 1: datagram 0, a key record, 48 bytes
	// broadcast 2: datagram 1, a run record, 33 bytes
	// broadcast 3: datagram 2, a run record, 33 bytes
	// broadcast 4: datagram 3, a run record, 33 bytes
	// frames committed: 4
}
