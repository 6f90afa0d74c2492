// Package codec is the islandsync wire format: version 3, the default —
// quantized frames as keyframes or deltas against baselines the observer
// holds (below) — and version 1, an explicit, little-endian, field-by-field
// lossless encoding of float frames, cut into fragments that fit one
// datagram and packed several to a datagram when they are small; and the
// control messages of the reliable stream beside them.
//
// The byte layout is specified in docs/wire-format.md; testdata/golden holds
// datagrams that every platform must encode and decode byte for byte.
//
// # Usage
//
// Version 3, the default: Encoder builds one observer's datagrams for one
// broadcast, Decoder parses each datagram whole (ExampleEncoder runs it):
//
//	enc, _ := codec.NewEncoder(codec.Config{}) // 1200-byte datagrams
//	enc.Begin(packet, seq, now)                // this observer's datagram number, the broadcast, its time
//	_ = enc.AddKey(&frame)                     // or AddDelta(&frame, &codec.Ref{Base: held})
//	for _, dg := range enc.Datagrams() { conn.Write(dg) }
//
//	dec, _ := codec.NewDecoder(codec.Config{})
//	h, recs, err := dec.Decode(packet) // then recs[i].ExpandKey, ExpandDelta, Predict
//
// Version 1, float frames (FloatEncoder, FloatDecoder), once per broadcast
// tick and once per datagram:
//
//	enc, _ := codec.NewFloatEncoder(codec.Config{})
//	enc.Reset()
//	for i := range frames {
//		if err := enc.Add(&frames[i]); err != nil { /* refused: NaN, too large, … */ }
//	}
//	for _, dg := range enc.Datagrams() { conn.Write(dg) }
//
//	dec, _ := codec.NewFloatDecoder(codec.Config{})
//	frags, err := dec.Decode(packet)
//	if err != nil { /* count errors.Is(err, codec.ErrTruncated) … and drop */ }
//	for i := range frags { asm.Push(now, &frags[i]) }
//
// Every record type has an Append method or function, a size constant and a
// Parse function returning (value, consumed, error).
//
// # Wire version 3
//
// Version 3 carries the same island frames quantized (package quant), in
// datagrams numbered per observer (the observer confirms datagrams, not
// islands: Received). The whole frames of a broadcast travel in batch
// records, one per datagram: a range-coded stream (an adaptive binary range
// coder in integer arithmetic, rangecode.go; its contexts start afresh in
// every record, so each datagram decodes alone) that says of each island
// whether it moved exactly as its baseline's motion predicts (a few
// hundredths of a bit among others at rest), or carries residuals against a
// baseline frame the observer holds (package baseline), or is a keyframe. A
// frame too large for one datagram is cut into key or delta fragment
// records. Encoder builds one observer's datagrams for one broadcast
// (Begin, AddKey, AddDelta, Datagrams); one Encoder serving each observer
// of a broadcast in turn cuts a frame into fragments once for all the
// observers that code it alike (the same frame, baseline, datagram size
// and parity), and frames each one's records from that cut: with 8
// observers a broadcast of a 400-member chain keyframe and 24 small
// islands (BenchmarkFanOut) costs about half what it did. Decoder parses a datagram whole
// (its check, framing, caps) and returns one record per island — a batch's
// predicted islands gathered into runs — whose members expand with
// ExpandKey, ExpandDelta (given the baseline) and Predict (runs).
// Joint prediction (joint.go): a keyframe or delta of an island whose
// members hang on each other by pivot joints — a chain, a ragdoll — codes
// each such member's position and velocity against where its joint puts
// it, from the member it hangs on as just restored and its own angle, not
// against the baseline's motion or the member before: on the 240-link
// chain that halves the bytes and keeps every frame in one datagram. Both
// ends build the island's Links from its Physics (NewLinks): the encoder
// through Frame.Links, the receiver for ExpandKey and ExpandDelta, which
// refuse a joint-predicted record without them (ErrNoLinks). The arithmetic is in
// integers only — a generated cosine table (trig_table.go) and fixed-point
// anchors — so every architecture restores the same bits.
// Residuals is the six values a delta member carries against its
// baseline's motion, for tools that measure a scene (the bandwidth
// benchmark reports their entropy beside what the coder spends). A frame
// cut into 2 … MaxParityFragments fragments may carry Reed–Solomon parity
// records (Encoder.SetParity; github.com/klauspost/reedsolomon): any
// Fragments of its Fragments+Parity records complete it. Fragments are cut
// to even sizes so that parity shards stay short; with parity on, a frame
// of several members that would take a quarter of a datagram or more
// (ParityCut) is cut into two fragments even though it would fit a batch,
// so that parity protects it. AppendStandalone gives a
// received fragment's shard, ParityDecoder rebuilds missing ones and
// ParseStandalone reads them back as records (Decoder.ParseStandalone
// does so in the decoder's storage, without allocating). Versions 1 and 3
// are decodable, DatagramVersion tells them apart; version 2, whose records
// named per-island baseline windows, is retired (ErrVersion). The files
// follow the concepts: wire.go (the format's constants, frames and sums),
// predict.go (the prediction arithmetic), joint.go and trig_table.go
// (joint prediction), encode.go, decode.go, batch.go
// (the batch record's coding), parity.go, rangecode.go; float_encoder.go,
// float_decoder.go, fragment.go and member.go are version 1's. The receive
// path that does all of this is package receiver.
//
// # Control messages
//
// The reliable control stream (server → observer: Welcome, Announce,
// Destroy, Lease, Manifest, Physics, PhysicsRef, Spawn, Final, Forget,
// Cut;
// observer → server: Hello, Subscribe, Received, Keyframes) uses
// the same style: each message type implements Message (Type, Size,
// Append) in a file of its own (control_*.go; Physics in physics.go), and
// ParseControl reads one message under ControlLimits. A stream
// reader calls ControlLength on the first bytes to learn how many to wait
// for; the cap is checked before anything is buffered. A ControlDecoder
// reads the same messages, decoding the ones that flow all the time
// (Received, Keyframes) into storage it reuses: reading them
// allocates nothing once it has grown, and their slices last until the next
// Decode. TypeOf gives a message's type without calling through the
// interface, so that a function handed a message need not make it escape.
// A Subscribe names every island, a list, or regions — axis-aligned boxes
// in world metres, the observer's areas of interest (control version 4).
// A PhysicsRef gives an island a Physics description the observer already
// holds, by its digest (PhysicsDigest); PhysicsCache is the table of held
// descriptions both ends keep by one rule (control version 5). A Physics
// codes each body and joint against the one before it (control version 6):
// a chain of identical links costs a byte per link and per joint after the
// first two. Identity lists (Announce, Destroy, Manifest, Spawn) are runs
// of consecutive stable ids of one generation, 14 bytes a run, and a
// Spawn's states are coded against the member before, bytes of their bits'
// XOR (control version 7): the demo's 240-link chain announces its bodies
// in 31 bytes and spawns them in 3 786 rather than 14 425. A Final (control
// version 8), laid out as a Spawn, is an island's last state under its
// lease that a front relaying a hand-off sends just before the new Lease,
// so that an observer holds it even when the frame's datagram comes after
// that Lease.
//
//	b = codec.Lease{Island: 7, Epoch: 2, Owner: 3}.Append(b)
//	msg, n, err := codec.ParseControl(b, &lim) // msg.(codec.Lease)
//	typ, n, err := dec.Decode(b)               // dec.Message().(codec.Lease)
//
// A StreamCopy is not a message but a datagram ("ISYC", its own magic)
// carrying a run of the server's control-stream bytes at their stream
// position, sent again so that a lost stream packet need not wait for
// QUIC's retransmission; package transport reads the stream from the
// stream and its copies together.
//
// # Guarantees
//
//   - Encoding never depends on host byte order, struct layout or word size:
//     integers go through encoding/binary.LittleEndian one field at a time and
//     floats as their IEEE-754 binary64 bit patterns. No unsafe.
//   - Decoding is total: any byte string yields fragments or an error wrapping
//     one of ErrTruncated, ErrBadMagic, ErrVersion, ErrLimit, ErrMalformed,
//     ErrNonFinite or (control messages) ErrUnknownType; Reason names it.
//     Every declared length and count is checked against the bytes present
//     and the configured caps (in the unsigned domain, so 32-bit targets
//     cannot overflow) before anything is sized from it. A datagram with any
//     bad record yields no fragment at all.
//   - There is one canonical encoding: a datagram that decodes re-encodes to
//     the identical bytes. Unknown flag bits, trailing bytes and length
//     mismatches are errors, not ignored.
//   - Encoders and decoders own and reuse their buffers: in steady state
//     none allocates. Decoded version-1 fragments keep their members in wire form
//     (Fragment.Raw, a run of Records) after checking them, so receivers
//     decode each member once, where its value is finally stored. There is
//     one way to read a member in place: Records.ID for the identity alone,
//     Records.Member for all of it, reporting whether its floats are finite
//     (ParseMember is the same for a standalone record).
//   - Every fragment header carries the frame digest: xxhash64 of the
//     frame-level header fields and all member records (Digest). A
//     quantized (version 3) frame cut into fragments carries its frame sum
//     instead (FrameSum: the same hash over its integers, class included);
//     its receiver reassembles the restored integers as QuantRecords
//     (AppendQuantRecords) under a header marked Quantized, and QuantSum
//     checks them.
//
// # Limits
//
// Config caps the datagram size (default 1200 bytes, at least 576), the
// members of one frame (default 4096) and its fragments (default 512). The
// decoder does not check that fragments of one frame agree with each other or
// that the frame digest matches; that is the assembler's job, since it needs
// the whole frame. Encoders and decoders are not safe for concurrent use.
package codec
