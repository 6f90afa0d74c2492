package assembler_test

import (
	"fmt"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// An engine's receive loop: decode each datagram, push its fragments, act on
// completed frames. Here a 40-member frame arrives as three datagrams in
// reverse order, with one duplicate.
func Example() {
	frame := island.Frame{Sender: 1, Key: island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1, Seq: 42}, Time: 2_100_000}
	for i := 0; i < 40; i++ {
		frame.Members = append(frame.Members, island.Member{ID: island.MemberID{Stable: uint64(i)}, State: island.State{X: float64(i)}})
	}
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	_ = enc.Add(&frame)
	dgs := enc.Datagrams()
	arrivals := [][]byte{dgs[2], dgs[1], dgs[1], dgs[0]}

	dec, _ := codec.NewFloatDecoder(codec.Config{})
	asm, _ := assembler.New(assembler.Config{})
	var now int64 // µs on the receiver's clock
	for _, dg := range arrivals {
		now += 1000
		frags, err := dec.Decode(dg)
		if err != nil {
			fmt.Println("dropped:", err)
			continue
		}
		for i := range frags {
			outcome, f := asm.Push(now, &frags[i])
			fmt.Println(outcome)
			if f != nil {
				var got island.Frame
				f.Decode(&got)
				fmt.Println(got.Key, len(got.Members), "members from", f.Fragments, "fragments, equal:", got.Equal(&frame))
			}
		}
	}
	fmt.Println("pending bytes:", asm.Stats().PendingBytes)
	// Output:
	// buffered
	// buffered
	// duplicate
	// completed
	// i7/e1/t1/c1#42 40 members from 3 fragments, equal: true
	// pending bytes: 0
}
