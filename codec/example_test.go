package codec_test

import (
	"encoding/hex"
	"fmt"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// A one-member frame fits in one datagram: the 6-byte datagram header, a
// 2-byte record length, the 59-byte fragment header and one 60-byte member.
func ExampleFloatEncoder() {
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	f := island.Frame{
		Sender:  1,
		Key:     island.Key{Island: 7, Epoch: 1, Topology: 3, Config: 2, Seq: 100},
		Time:    1_500_000, // 1.5 s of authority time
		Members: []island.Member{{ID: island.MemberID{Stable: 10}, State: island.State{X: 1, Y: 2, Angle: 0.5}}},
	}
	if err := enc.Add(&f); err != nil {
		panic(err)
	}
	dg := enc.Datagrams()[0]
	fmt.Println(len(dg), "bytes")
	fmt.Print(hex.Dump(dg))
	// Output:
	// 127 bytes
	// 00000000  49 53 59 4e 01 01 77 00  01 00 00 00 07 00 00 00  |ISYN..w.........|
	// 00000010  01 00 00 00 03 00 00 00  02 00 00 00 64 00 00 00  |............d...|
	// 00000020  60 e3 16 00 00 00 00 00  00 00 00 00 00 01 00 00  |`...............|
	// 00000030  00 00 00 01 00 00 00 00  00 01 00 de 9f 25 ae 82  |.............%..|
	// 00000040  b3 7e 30 0a 00 00 00 00  00 00 00 00 00 00 00 00  |.~0.............|
	// 00000050  00 00 00 00 00 f0 3f 00  00 00 00 00 00 00 40 00  |......?.......@.|
	// 00000060  00 00 00 00 00 e0 3f 00  00 00 00 00 00 00 00 00  |......?.........|
	// 00000070  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00     |...............|
}

// Decoding returns fragments whose members alias the decoder's storage.
func ExampleFloatDecoder() {
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	f := island.Frame{Key: island.Key{Island: 3, Seq: 9}, Members: []island.Member{{ID: island.MemberID{Stable: 5, Generation: 2}}}}
	_ = enc.Add(&f)
	dec, _ := codec.NewFloatDecoder(codec.Config{})
	frags, err := dec.Decode(enc.Datagrams()[0])
	if err != nil {
		panic(err)
	}
	h := frags[0].Header
	fmt.Println(h.Key, h.Index, h.Count, frags[0].Raw.ID(0))
	// Output: i3/e0/t0/c0#9 0 1 5.g2
}

// A ControlDecoder reads a control stream message by message. A Keyframes
// lands in storage the decoder reuses, valid until the next Decode; a Lease
// or a Received, like every other message, is the caller's to keep.
func ExampleControlDecoder() {
	var stream []byte
	stream = codec.Lease{Island: 7, Epoch: 2, Owner: 3}.Append(stream)
	stream = codec.Received{Newest: 120, Prior: 0b11}.Append(stream)
	stream = codec.Keyframes{Islands: []uint32{7, 9}}.Append(stream)
	dec := codec.NewControlDecoder(codec.ControlLimits{})
	for len(stream) > 0 {
		typ, n, err := dec.Decode(stream)
		if err != nil {
			panic(err) // the peer broke the protocol
		}
		switch m := dec.Message().(type) {
		case codec.Lease:
			fmt.Println(typ, "island", m.Island, "epoch", m.Epoch, "owner", m.Owner)
		case codec.Received:
			fmt.Println(typ, "newest", m.Newest, "prior", m.Prior)
		case codec.Keyframes:
			fmt.Println(typ, "islands", m.Islands)
		}
		stream = stream[n:]
	}
	// Output:
	// lease island 7 epoch 2 owner s3
	// received newest 120 prior 3
	// keyframes islands [7 9]
}

// The default wire (version 3) by hand: a keyframe of a one-body island,
// then — once the observer holds it — the next frame as a delta against
// it. The decoder parses each datagram whole; ExpandKey restores a key,
// ExpandDelta restores a delta from the baseline the record names.
func ExampleEncoder() {
	enc, _ := codec.NewEncoder(codec.Config{})
	dec, _ := codec.NewDecoder(codec.Config{})
	body := island.MemberID{Stable: 5}
	frame := func(seq uint32, x int64) codec.Frame {
		return codec.Frame{Sender: 1, Key: island.Key{Island: 3, Epoch: 1, Topology: 1, Config: 1, Seq: seq}, Class: quant.Rigid,
			Members: []baseline.Entry{{ID: body, Record: baseline.Record{Q: quant.State{X: x}}}}}
	}
	key := frame(10, 1000) // x = 1000/512 m, at rest
	enc.Begin(0, 10, 500_000)
	_ = enc.AddKey(&key)
	h, recs, _ := dec.Decode(enc.Datagrams()[0])
	members, _ := recs[0].ExpandKey(nil, nil, h.Time) // no links: the island has no joints
	held := &baseline.Table{ID: h.Seq, Entries: members,
		Frame: baseline.FrameInfo{Sender: 1, Key: key.Key, Time: h.Time, Class: quant.Rigid}}
	fmt.Println("key:", len(enc.Datagrams()[0]), "bytes, x", held.Entries[0].Q.X)

	next := frame(11, 1040) // moved 40/512 m
	enc.Begin(1, 11, 550_000)
	_ = enc.AddDelta(&next, &codec.Ref{Base: held})
	dg := enc.Datagrams()[0]
	h, recs, _ = dec.Decode(dg)
	ents, _ := recs[0].ExpandDelta(nil, held, nil, h.Time)
	fmt.Println("delta:", len(dg), "bytes, lag", recs[0].Lag, "x", ents[0].Q.X)
	// Output:
	// key: 41 bytes, x 1000
	// delta: 39 bytes, lag 1 x 1040
}
