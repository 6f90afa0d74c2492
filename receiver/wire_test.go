package receiver

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// loop is an authority and one observer wired in-process: control and
// feedback delivered at once, datagrams through drop.
type loop struct {
	t    testing.TB
	auth *scenario.Authority
	bc   *broadcast.Broadcaster
	rx   *Receiver
	lim  codec.ControlLimits
	now  int64
	ctl  []byte
	fb   []byte
	dgs  []broadcast.Datagram
	sent uint64 // datagram bytes
}

func newLoop(t testing.TB, names string, wire int) *loop {
	return newLoopConfig(t, names, broadcast.Config{Wire: wire})
}

// newLoopConfig is newLoop with the broadcaster's configuration (its
// SendPeriod is the authority's).
func newLoopConfig(t testing.TB, names string, cfg broadcast.Config) *loop {
	scs, err := scenario.Pick(names)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SendPeriod = auth.Period()
	bc, err := broadcast.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rx, _ := New(Config{})
	l := &loop{t: t, auth: auth, bc: bc, rx: rx, lim: codec.ControlLimits{}.WithDefaults()}
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	return l
}

// smallDatagrams caps datagrams at the smallest size an observer may
// ask for (576 bytes): the chain's frames, which joint prediction keeps
// within one datagram of the default size, are then cut into fragments,
// for the tests of reassembly and parity.
var smallDatagrams = codec.Config{MaxDatagram: codec.MinMaxDatagram}

// step runs one simulation step; drop decides the fate of each datagram.
func (l *loop) step(drop func(i int) bool) {
	l.send()
	l.receive(drop)
	l.feedBack()
}

// send steps the authority, broadcasts, and delivers the control stream.
func (l *loop) send() {
	l.broadcast()
	l.control()
}

// broadcast steps the authority and takes what the broadcaster queued.
func (l *loop) broadcast() {
	l.now += 1_000_000 / scenario.StepHz
	msgs, frames := l.auth.Step()
	for _, m := range msgs {
		_ = l.bc.Apply(m)
	}
	l.bc.Frames(frames)
	l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
}

// control applies the control stream the broadcaster queued.
func (l *loop) control() {
	if n, err := l.rx.ControlBytes(l.now, l.ctl); err != nil || n != len(l.ctl) {
		l.t.Fatalf("control: applied %d of %d bytes: %v", n, len(l.ctl), err)
	}
}

// receive is the observer's receive path: the datagrams drop lets through,
// a render, and the feedback to send.
func (l *loop) receive(drop func(i int) bool) {
	for i, d := range l.dgs {
		l.sent += uint64(len(d.Bytes))
		if drop == nil || !drop(i) {
			l.rx.Datagram(l.now, d.Bytes)
		}
	}
	l.rx.Render(l.now)
	l.fb = l.rx.Feedback(l.fb[:0])
}

// feedBack delivers the observer's feedback to the broadcaster.
func (l *loop) feedBack() {
	if n, err := l.bc.FeedbackBytes(1, l.fb); err != nil || n != len(l.fb) {
		l.t.Fatalf("feedback: applied %d of %d bytes: %v", n, len(l.fb), err)
	}
}

func (l *loop) deliver(b []byte, f func(codec.Message)) {
	for len(b) > 0 {
		m, n, err := codec.ParseControl(b, &l.lim)
		if err != nil {
			l.t.Fatal(err)
		}
		f(m)
		b = b[n:]
	}
}

// TestWireLoop: on wire 3 with confirmations flowing, every frame commits,
// deltas replace keyframes once datagrams are confirmed, the window moves
// on without ever stalling or losing a baseline a delta names, and the
// bytes are a fraction of wire 1's.
func TestWireLoop(t *testing.T) {
	v1, v2 := newLoop(t, "chain,ragdolls,bridge", 1), newLoop(t, "chain,ragdolls,bridge", 3)
	for range 360 { // 6 s
		v1.step(nil)
		v2.step(nil)
	}
	s1, s2 := v1.rx.Stats(), v2.rx.Stats()
	b2 := v2.bc.Stats()
	if s2.FramesCommitted < b2.Frames-3 {
		t.Fatalf("committed %d of %d frames", s2.FramesCommitted, b2.Frames)
	}
	if s2.Wire.Keyframes*10 > s2.Wire.Records {
		t.Fatalf("%d keyframes in %d records: deltas are not used", s2.Wire.Keyframes, s2.Wire.Records)
	}
	if s2.Wire.NoBaseline != 0 || s2.Wire.Digest != 0 || s2.Wire.Refused != 0 {
		t.Fatalf("v2 stats %+v", s2.Wire)
	}
	t.Logf("wire 1: %d bytes, %d frames; wire 3: %d bytes, %d frames; %+v", v1.sent, s1.FramesCommitted, v2.sent, s2.FramesCommitted, s2.Wire)
	if v2.sent*3 > v1.sent {
		t.Fatalf("wire 3 sent %d bytes, wire 1 %d", v2.sent, v1.sent)
	}
}

// TestWireKeyframeOnMissingBaseline: when the observer loses its baselines
// (here: all of them, as if it had restarted its decode state), deltas
// naming them are refused whole, counted, a keyframe is asked for, and the
// next frames of the island commit again.
func TestWireKeyframeOnMissingBaseline(t *testing.T) {
	l := newLoop(t, "teleport", 3)
	for range 60 {
		l.step(nil)
	}
	before := l.rx.Stats().FramesCommitted
	clear(l.rx.bases) // the decode baselines are gone
	for range 30 {
		l.step(nil)
	}
	st := l.rx.Stats()
	if st.Wire.NoBaseline == 0 {
		t.Fatal("no delta was refused")
	}
	if st.FramesCommitted < before+5 {
		t.Fatalf("commits did not resume: %d then %d", before, st.FramesCommitted)
	}
}

// TestWireLossKeepsDecoding: datagrams lost at random never stop decoding:
// deltas name only acknowledged baselines.
func TestWireLossKeepsDecoding(t *testing.T) {
	l := newLoop(t, "ragdolls,chain", 3)
	k := 0
	for range 300 {
		l.step(func(int) bool { k++; return k%7 == 0 })
	}
	st := l.rx.Stats()
	if st.Wire.NoBaseline != 0 || st.Wire.Digest != 0 {
		t.Fatalf("v2 stats under loss %+v", st.Wire)
	}
	if st.FramesCommitted == 0 {
		t.Fatal("nothing committed")
	}
}

// TestWelcomeRaisesDatagramCap: an authority that announces larger
// datagrams than the receiver's configured cap gets them decoded.
func TestWelcomeRaisesDatagramCap(t *testing.T) {
	rx, _ := New(Config{})
	w := welcome
	w.MaxDatagram = 1400
	mustControl(t, rx, 0, w)
	if rx.dec.Config().MaxDatagram != 1400 {
		t.Fatalf("cap %d", rx.dec.Config().MaxDatagram)
	}
}

// TestWireSteadyStateAllocs: once warm, the wire-3 receive path — the
// control stream (window advances), decode, expand, reassemble, validate,
// commit, keep the baseline, render, feed back — and the broadcaster
// reading that feedback (acknowledgements, window confirmations and the
// advances they start) allocate nothing.
func TestWireSteadyStateAllocs(t *testing.T) {
	l := newLoop(t, "ragdolls,chain", 3)
	if n, _ := receiveAllocs(l, nil); n > 0 {
		t.Fatalf("%d allocations in 100 steps of the receive path and the feedback", n)
	}
}

// TestWireParityAllocs: the same with one fragment of every chain frame lost
// and rebuilt from parity. Keeping records and the rebuilt shards reuse
// pooled buffers; what allocates is the Reed–Solomon library's
// reconstruction (its working slices), a few per rebuilt frame — bounded
// here, so that a leak per record would fail.
func TestWireParityAllocs(t *testing.T) {
	l := newLoopConfig(t, "chain", broadcast.Config{Wire: 3, Parity: 2, Codec: smallDatagrams})
	dec, _ := codec.NewDecoder(codec.Config{})
	drop := func(i int) bool { return i == 0 && fragmented(t, dec, l.dgs[i].Bytes) }
	n, rebuilt := receiveAllocs(l, drop)
	t.Logf("%d allocations for %d rebuilt fragments", n, rebuilt)
	if rebuilt < 20 {
		t.Fatalf("%d fragments rebuilt", rebuilt)
	}
	if n > 8*rebuilt {
		t.Fatalf("%d allocations in 100 steps with %d rebuilt fragments", n, rebuilt)
	}
}

// fragmented reports whether a wire-3 datagram carries a data fragment.
func fragmented(t testing.TB, dec *codec.Decoder, dg []byte) bool {
	_, recs, err := dec.Decode(dg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind != codec.KindParity && r.Fragments > 1 {
			return true
		}
	}
	return false
}

// receiveAllocs warms l for 400 steps, then counts the allocations of the
// receive path (control, datagrams, render, feedback) and of the
// broadcaster reading that feedback, and the fragments rebuilt from parity,
// over 100 more; drop decides the fate of each datagram.
func receiveAllocs(l *loop, drop func(i int) bool) (mallocs, rebuilt uint64) {
	for range 1200 { // 20 s: ten keyframe turns, every buffer at its size
		l.step(drop)
	}
	rebuilt = l.rx.Stats().Assembler.Count(assembler.Rebuilt)
	var m0, m1 runtime.MemStats
	// As testing.AllocsPerRun does: one P, so no other goroutine's
	// allocations land in the window.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.GC()
	for range 100 {
		l.broadcast()
		runtime.ReadMemStats(&m0)
		l.control()
		l.receive(drop)
		l.feedBack()
		runtime.ReadMemStats(&m1)
		mallocs += m1.Mallocs - m0.Mallocs
	}
	return mallocs, l.rx.Stats().Assembler.Count(assembler.Rebuilt) - rebuilt
}

// TestWireParityRebuilds: a 240-link chain whose frames are cut into several
// datagrams loses one fragment-carrying datagram in every broadcast. With
// two parity records per frame every frame still commits, from rebuilt
// fragments; without parity almost none does.
func TestWireParityRebuilds(t *testing.T) {
	commits := func(parity int) (Stats, uint64) {
		l := newLoopConfig(t, "chain", broadcast.Config{Wire: 3, Parity: parity, Codec: smallDatagrams})
		dec, _ := codec.NewDecoder(codec.Config{})
		for range 240 { // 4 s
			lost := false
			l.step(func(i int) bool {
				if !lost && fragmented(t, dec, l.dgs[i].Bytes) {
					lost = true
					return true
				}
				return false
			})
		}
		return l.rx.Stats(), l.bc.Stats().Frames
	}
	with, frames := commits(2)
	without, _ := commits(-1)
	t.Logf("%d frames: %d commit with parity (%d fragments rebuilt), %d without", frames, with.FramesCommitted, with.Assembler.Count(assembler.Rebuilt), without.FramesCommitted)
	if with.Assembler.Count(assembler.Rebuilt) == 0 || with.FramesCommitted < frames-3 {
		t.Fatalf("with parity: %d of %d frames commit, %d fragments rebuilt", with.FramesCommitted, frames, with.Assembler.Count(assembler.Rebuilt))
	}
	if without.FramesCommitted*2 > frames {
		t.Fatalf("without parity %d of %d frames commit: the loss does not bite", without.FramesCommitted, frames)
	}
}

// TestWireParityHostile: parity records whose shards were tampered with (and
// the datagram check recomputed, as an attacker would) never complete a
// frame with a lost fragment: a rebuild that is no fragment record of the
// frame (its head forged) is refused and counted, one whose coded members
// were forged fails the frame's digest, and nothing panics.
func TestWireParityHostile(t *testing.T) {
	l := newLoopConfig(t, "chain", broadcast.Config{Wire: 3, Parity: 2, Codec: smallDatagrams})
	dec, _ := codec.NewDecoder(codec.Config{})
	var lostFrames, bad int
	for range 240 {
		lost := false
		l.step(func(i int) bool {
			dg := l.dgs[i].Bytes
			if !lost && fragmented(t, dec, dg) {
				lost = true
				lostFrames++
				return true
			}
			if _, recs, err := dec.Decode(dg); err == nil && len(recs) == 1 && recs[0].Kind == codec.KindParity {
				forged := append([]byte(nil), dg...)
				if i%2 == 0 {
					forged[len(forged)-1-i%7] ^= 0x5a // among the rebuilt fragment's coded members
				} else {
					forged[len(forged)-len(recs[0].Shard())] ^= 0x5a // the rebuilt fragment's head
				}
				l.rx.Datagram(l.now, resign(forged))
				bad++
				return true
			}
			return false
		})
	}
	st := l.rx.Stats()
	t.Logf("%d frames lost a fragment, %d forged parity records: %+v", lostFrames, bad, st.Wire)
	if lostFrames < 40 || bad < 2*lostFrames {
		t.Fatalf("%d frames lost a fragment, %d parity records forged", lostFrames, bad)
	}
	if st.Assembler.Count(assembler.RejectParity) == 0 {
		t.Fatal("no forged rebuild was refused")
	}
	// Forged shards that still parse as a fragment are refused by reassembly:
	// the frame's digest, or a conflict with a copy of the fragment held.
	var refused, named uint64
	st.Rejects(func(reason string, n uint64) {
		if strings.Contains(reason, "digest") || strings.Contains(reason, "conflict") {
			refused += n
		}
		if reason == "assembler:parity-bad" {
			named = n
		}
	})
	if named != st.Assembler.Count(assembler.RejectParity) {
		t.Fatalf("Rejects names %d parity-bad, stats hold %d", named, st.Assembler.Count(assembler.RejectParity))
	}
	if st.Assembler.Count(assembler.Rebuilt) > refused {
		t.Fatalf("%d fragments rebuilt from forged parity, %d refused by reassembly", st.Assembler.Count(assembler.Rebuilt), refused)
	}
	if st.FramesCommitted > l.bc.Stats().Frames-uint64(lostFrames) {
		t.Fatalf("%d frames committed of %d sent with %d unrecoverable", st.FramesCommitted, l.bc.Stats().Frames, lostFrames)
	}
}

// resign recomputes a wire-3 datagram's check: the low 32 bits of xxhash64
// over bytes 0–24 and 29 to the end.
func resign(dg []byte) []byte {
	h := xxhash.New()
	_, _ = h.Write(dg[:25])
	_, _ = h.Write(dg[29:])
	binary.LittleEndian.PutUint32(dg[25:], uint32(h.Sum64()))
	return dg
}

// TestWireWholeRecords: frames that come whole in one record skip reassembly;
// a datagram delivered twice still commits each of its frames once, and a
// whole delta that restores to other members than were sent (a residual
// changed in flight, the datagram check recomputed) fails its digest,
// commits nothing and asks for a keyframe of its island.
func TestWireWholeRecords(t *testing.T) {
	l := newLoop(t, "ragdolls", 3)
	for range 100 {
		l.step(nil)
	}
	dec, _ := codec.NewDecoder(codec.Config{})
	frames0, commits0 := l.bc.Stats().Frames, l.rx.Stats().FramesCommitted
	wholes := 0
	for range 60 {
		l.send()
		for _, d := range l.dgs {
			_, recs, err := dec.Decode(d.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Kind == codec.KindDelta && r.Fragments == 1 {
					wholes++
				}
			}
			l.rx.Datagram(l.now, d.Bytes)
			l.rx.Datagram(l.now, d.Bytes)
		}
		l.rx.Render(l.now)
		l.fb = l.rx.Feedback(l.fb[:0])
		l.feedBack()
	}
	sent, committed := l.bc.Stats().Frames-frames0, l.rx.Stats().FramesCommitted-commits0
	if wholes < 100 || committed != sent {
		t.Fatalf("%d whole deltas; %d frames sent, %d commits with every datagram twice", wholes, sent, committed)
	}

	// Forge the last residual of a datagram that ends in a whole delta.
	var forgedIsland uint32
	for forgedIsland == 0 {
		l.send()
		for _, d := range l.dgs {
			_, recs, err := dec.Decode(d.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			last := recs[len(recs)-1]
			if forgedIsland != 0 || last.Kind != codec.KindDelta || last.Fragments != 1 {
				l.rx.Datagram(l.now, d.Bytes)
				continue
			}
			// A bit flipped in the batch stream, from its end back, until
			// the datagram still decodes but to other records.
			_, orig, _ := dec.Decode(d.Bytes)
			want := fmt.Sprint(orig)
			var forged []byte
			for at := len(d.Bytes) - 1; at > codec.HeaderSize+4 && forged == nil; at-- {
				b := append([]byte(nil), d.Bytes...)
				b[at] ^= 0x04
				if _, recs, err := dec.Decode(resign(b)); err == nil && fmt.Sprint(recs) != want {
					forged = b
				}
			}
			if forged == nil {
				t.Fatal("no forgery decodes")
			}
			forgedIsland = last.Island
			before := l.rx.Stats()
			l.rx.Datagram(l.now, forged)
			after := l.rx.Stats()
			if after.Wire.Digest != before.Wire.Digest+1 {
				t.Fatalf("digest failures %d → %d", before.Wire.Digest, after.Wire.Digest)
			}
		}
		l.rx.Render(l.now)
		l.fb = l.rx.Feedback(l.fb[:0])
	}
	asked := false
	l.deliver(l.fb, func(m codec.Message) {
		if k, ok := m.(codec.Keyframes); ok && slices.Contains(k.Islands, forgedIsland) {
			asked = true
		}
	})
	if !asked {
		t.Fatalf("no keyframe asked for island %d", forgedIsland)
	}
}

// TestWireHugeBatchIsRefused: a batch record naming more islands than one
// record may carry (codec.MaxBatchIslands) is refused at decoding, before
// any island is visited: one forged datagram cannot hold the receiver.
func TestWireHugeBatchIsRefused(t *testing.T) {
	l := newLoop(t, "ragdolls", 3)
	for range 40 {
		l.step(nil)
	}
	dg := append([]byte(codec.Magic), codec.VersionV3)
	dg = binary.LittleEndian.AppendUint32(dg, 7)         // packet
	dg = binary.LittleEndian.AppendUint32(dg, 1_000_000) // a sequence no baseline has
	dg = binary.LittleEndian.AppendUint64(dg, uint64(l.now))
	dg = binary.LittleEndian.AppendUint32(dg, 0) // sum: whatever, nothing commits
	dg = binary.LittleEndian.AppendUint32(dg, 0) // check, set below
	dg = append(dg, byte(codec.KindBatch))
	dg = binary.AppendUvarint(dg, 0)                       // first island
	dg = binary.AppendUvarint(dg, codec.MaxBatchIslands+1) // islands
	dg = binary.AppendUvarint(dg, 1)                       // stream length
	dg = append(dg, 0)                                     // the stream
	before := l.rx.Stats()
	l.rx.Datagram(l.now, resign(dg))
	after := l.rx.Stats()
	if after.Wire.Records != before.Wire.Records || after.Decode.Limit != before.Decode.Limit+1 {
		t.Fatalf("before %+v after %+v", before, after)
	}
}

// TestRestartAfterLongUptime: an authority that ran for 200 broadcasts —
// far past the assembler's 64-frame stale window — restarts on a new
// timeline, its frame sequences starting again from zero. The receiver
// keeps nothing of the old timeline's streams: within one second of the
// new authority's first frame (20 broadcasts at 20 Hz) every island has
// committed again, the chain's frames cut into several datagrams included,
// and no new frame is refused as stale.
func TestRestartAfterLongUptime(t *testing.T) {
	l := newLoopConfig(t, "chain,ragdolls,break", broadcast.Config{Wire: 3, Timeline: 1, Codec: smallDatagrams})
	for range 600 {
		l.step(nil)
	}
	before := l.rx.Stats()
	if before.Assembler.Count(assembler.Completed) == 0 {
		t.Fatal("setup: no frame was cut into several datagrams")
	}
	next := newLoopConfig(t, "chain,ragdolls,break", broadcast.Config{Wire: 3, Timeline: 2, Codec: smallDatagrams})
	l.auth, l.bc = next.auth, next.bc // the restarted authority, the same receiver
	fragmented := before.Assembler.Count(assembler.Completed)
	broadcasts := 0
	for step := 0; ; step++ {
		l.step(nil)
		if len(l.dgs) > 0 {
			broadcasts++
		}
		all := len(l.rx.Islands()) > 0
		for _, id := range l.rx.Islands() {
			all = all && l.rx.st.Frames(id) > 0
		}
		if all && l.rx.Stats().Assembler.Count(assembler.Completed) > fragmented {
			break
		}
		if broadcasts > 20 {
			after := l.rx.Stats()
			t.Fatalf("%d broadcasts after the restart, not every island has committed (fragmented frames %d → %d; stale %d → %d)",
				broadcasts, fragmented, after.Assembler.Count(assembler.Completed),
				before.Assembler.Count(assembler.RejectStale), after.Assembler.Count(assembler.RejectStale))
		}
	}
	after := l.rx.Stats()
	if s := after.Assembler.Count(assembler.RejectStale) - before.Assembler.Count(assembler.RejectStale); s != 0 {
		t.Fatalf("%d frames of the new timeline refused as stale", s)
	}
	if after.Timelines != 2 {
		t.Fatalf("timelines %d, want 2", after.Timelines)
	}
	t.Logf("every island committed %d broadcasts after the restart", broadcasts)
}

// TestArenaTablesGoBack: the one-body islands of the boxes scene keep
// their baselines in the receiver's arena, and an island forgotten gives
// its tables back, so that the arena's runs come free for later
// broadcasts: once every island is forgotten none is live there.
func TestArenaTablesGoBack(t *testing.T) {
	l := newLoop(t, "boxes", 3)
	for range 60 {
		l.step(nil)
	}
	if l.rx.arena.Live() == 0 {
		t.Fatal("no baseline kept in the arena")
	}
	held := 0
	for _, s := range l.rx.bases {
		if s != nil {
			held += s.kept.Len()
		}
	}
	if live := l.rx.arena.Live(); live > held || live < held/2 {
		t.Fatalf("%d tables live in the arena, the islands hold %d", live, held)
	}
	for _, id := range slices.Clone(l.rx.Islands()) {
		mustControl(t, l.rx, l.now, codec.Forget{Island: id})
	}
	if live := l.rx.arena.Live(); live != 0 {
		t.Fatalf("every island forgotten, %d tables still live in the arena", live)
	}
}
