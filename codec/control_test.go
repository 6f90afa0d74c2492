package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/island"
)

const controlGoldenDir = "../testdata/golden/control"

// controlCases are the control goldens: one per message type, plus the
// edge values of each field.
func controlCases() []struct {
	name string
	msg  Message
} {
	// runs: 10–12 of generation 0, 13 of generation 2, 40
	ids := []island.MemberID{{Stable: 10}, {Stable: 11}, {Stable: 12}, {Stable: 13, Generation: 2}, {Stable: 40}}
	return []struct {
		name string
		msg  Message
	}{
		{"welcome", Welcome{Version: ControlVersion, Timeline: 0x0123456789abcdef, SendPeriod: 50_000, MaxDatagram: 1200}},
		{"announce", Announce{Time: 1_500_000, IDs: ids}},
		{"destroy", Destroy{Time: 2_000_000, IDs: ids[1:2]}},
		{"lease", Lease{Island: 7, Epoch: 2, Owner: 3}},
		{"manifest", Manifest{Island: 7, Topology: 3, Config: 2, Members: ids}},
		{"forget", Forget{Island: 7, Time: 2_500_000}},
		// three links at rest a metre apart, then a body of generation 2
		{"spawn", Spawn{Island: 7, Time: 2_500_000, Segment: 1, Members: []island.Member{
			{ID: island.MemberID{Stable: 10}, State: island.State{X: 1, Y: -2, Angle: 0.25}},
			{ID: island.MemberID{Stable: 11}, State: island.State{X: 2, Y: -2, Angle: 0.25}},
			{ID: island.MemberID{Stable: 12}, State: island.State{X: 3, Y: -2, Angle: 0.25}},
			{ID: island.MemberID{Stable: 13, Generation: 2}, State: island.State{X: 2.5, Y: -2, VX: 3, AngVel: -1}}}}},
		{"cut", Cut{Island: 7, Segment: 2, Time: 2_000_000}},
		// the last state of island 7 under its lease: two links moving
		{"final", Final{Island: 7, Time: 2_450_000, Segment: 1, Members: []island.Member{
			{ID: island.MemberID{Stable: 10}, State: island.State{X: 1, Y: -2, Angle: 0.25, VX: 0.5}},
			{ID: island.MemberID{Stable: 11}, State: island.State{X: 2, Y: -2, Angle: 0.25, VX: 0.5}}}}},
		{"subscribe-all", Subscribe{All: true}},
		{"subscribe-list", Subscribe{Islands: []uint32{1, 7, 40}}},
		{"subscribe-regions", Subscribe{Regions: []Region{{X0: -20, Y0: 0, X1: 20, Y1: 15.5}, {X0: 480, Y0: -1, X1: 520.25, Y1: 40}}}},
		{"received", Received{Newest: 1042, Prior: 0x8000_0000_0000_0005}},
		{"keyframes", Keyframes{Islands: []uint32{7, 40}}},
		{"hello", Hello{Token: []byte{1, 0xfe, 0xff, 0x00, 0x07}}},
		{"physics", goldenPhysics()},
		// island 8, built like island 7: physics.bin's description, by its digest
		{"physics-ref", PhysicsRef{Island: 8, Topology: 1, Config: 1, Digest: PhysicsDigest(goldenPhysics().Append(nil))}},
		{"edges", Announce{Time: -1, IDs: []island.MemberID{{Stable: math.MaxUint64, Generation: math.MaxUint32}, {}}}},
	}
}

// goldenPhysics is a five-link island: link 0 hangs from a world point,
// link 1 (a 0.5 × 0.05 m box) keeps 0.5 m from link 0, link 2 slides
// 0.2–0.6 m from link 1, and links 3 and 4, like link 2, slide alike from
// the link before (the body and the joints coded against the ones before
// them); a floor runs below.
func goldenPhysics() Physics {
	return Physics{Island: 7, Topology: 3, Config: 2, Step: 16_667, Iterations: 30, Gravity: [2]float64{0, -9.8}, Damping: 1,
		Bodies: []BodyMass{{Mass: 1, Moment: 0.1}, {Mass: 1, Moment: 0.1, Width: 0.5, Height: 0.05, Friction: 0.7}, {Mass: 2.5, Moment: 0.75},
			{Mass: 2.5, Moment: 0.75}, {Mass: 2.5, Moment: 0.75}},
		Joints: []JointSpec{
			{Kind: JointPivot, A: 0, B: NoBody, AnchorA: [2]float64{-0.25, 0}, AnchorB: [2]float64{0, 10}},
			{Kind: JointPin, A: 0, B: 1, AnchorA: [2]float64{0.25, 0}, AnchorB: [2]float64{-0.25, 0}, Min: 0.5, Max: 0.5},
			{Kind: JointSlide, A: 1, B: 2, AnchorA: [2]float64{0.25, 0}, AnchorB: [2]float64{-0.25, 0}, Min: 0.2, Max: 0.6},
			{Kind: JointSlide, A: 2, B: 3, AnchorA: [2]float64{0.25, 0}, AnchorB: [2]float64{-0.25, 0}, Min: 0.2, Max: 0.6},
			{Kind: JointSlide, A: 3, B: 4, AnchorA: [2]float64{0.25, 0}, AnchorB: [2]float64{-0.25, 0}, Min: 0.2, Max: 0.6},
		},
		Static: []Segment{{A: [2]float64{-5, 0}, B: [2]float64{60, 0}, Radius: 0.1, Friction: 1}}}
}

// TestControlGolden encodes every control case and compares it byte for
// byte with testdata/golden/control; `go test ./codec -update` rewrites them.
func TestControlGolden(t *testing.T) {
	lim := ControlLimits{}.WithDefaults()
	for _, c := range controlCases() {
		t.Run(c.name, func(t *testing.T) {
			b := c.msg.Append(nil)
			if len(b) != c.msg.Size() {
				t.Fatalf("Append wrote %d bytes, Size says %d", len(b), c.msg.Size())
			}
			got, n, err := ParseControl(b, &lim)
			if err != nil || n != len(b) {
				t.Fatalf("own output does not parse: n=%d err=%v", n, err)
			}
			if !reflect.DeepEqual(got, c.msg) {
				t.Fatalf("round trip: got %#v want %#v", got, c.msg)
			}
			txt := fmt.Sprintf("%s: %+v\n%s", c.msg.Type(), c.msg, hex.Dump(b))
			checkGolden(t, filepath.Join(controlGoldenDir, c.name+".bin"), b, txt)
		})
	}
}

// TestControlWelcomeBytes pins the layout of one record by hand, field by
// field, so the golden files cannot drift together with the encoder.
func TestControlWelcomeBytes(t *testing.T) {
	b := Welcome{Version: 1, Timeline: 0x0807060504030201, SendPeriod: 50_000, MaxDatagram: 1200}.Append(nil)
	want := []byte{
		0x00, 0, 0, 0, // length: type + body, set below
		0x01,                                           // type welcome
		0x01,                                           // version
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // timeline
		0x50, 0xc3, 0, 0, // 50000 µs
		0xb0, 0x04, // 1200
	}
	want[0] = byte(len(want) - 4)
	if !bytes.Equal(b, want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
}

// TestControlTruncations: every proper prefix of every golden message fails
// with ErrTruncated, never a panic or a message.
func TestControlTruncations(t *testing.T) {
	lim := ControlLimits{}.WithDefaults()
	for _, c := range controlCases() {
		b := c.msg.Append(nil)
		for i := range b {
			m, n, err := ParseControl(b[:i], &lim)
			if !errors.Is(err, ErrTruncated) || m != nil || n != 0 {
				t.Fatalf("%s[:%d]: m=%v n=%d err=%v", c.name, i, m, n, err)
			}
		}
	}
}

// TestControlBitFlips: flipping any single bit of any golden message either
// fails with a typed error or yields a message that re-encodes to exactly
// the flipped bytes (the encoding is canonical).
func TestControlBitFlips(t *testing.T) {
	lim := ControlLimits{}.WithDefaults()
	for _, c := range controlCases() {
		orig := c.msg.Append(nil)
		for bit := 0; bit < 8*len(orig); bit++ {
			b := bytes.Clone(orig)
			b[bit/8] ^= 1 << (bit % 8)
			m, n, err := ParseControl(b, &lim)
			if err != nil {
				if !isCodecError(err) {
					t.Fatalf("%s bit %d: untyped error %v", c.name, bit, err)
				}
				continue
			}
			if re := m.Append(nil); !bytes.Equal(re, b[:n]) {
				t.Fatalf("%s bit %d: re-encoding differs", c.name, bit)
			}
		}
	}
}

func TestControlRejects(t *testing.T) {
	lim := ControlLimits{MaxMessage: 64, MaxIDs: 2, MaxMembers: 2, MaxIslands: 2}.WithDefaults()
	env := func(typ MessageType, body ...byte) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(1+len(body)))
		return append(append(b, byte(typ)), body...)
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f64s := func(vs ...float64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	run := func(first uint64, gen uint32, more uint16) []byte {
		b := binary.LittleEndian.AppendUint64(nil, first)
		b = binary.LittleEndian.AppendUint32(b, gen)
		return binary.LittleEndian.AppendUint16(b, more)
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"zero length", []byte{0, 0, 0, 0, 1}, ErrMalformed},
		{"length over cap", cat(u32(65), []byte{1}), ErrLimit},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 1}, ErrLimit},
		{"unknown type", env(0x7f, 0), ErrUnknownType},
		{"welcome version 1 (before Physics)", env(TypeWelcome, cat([]byte{1}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome version 2 (before Received)", env(TypeWelcome, cat([]byte{2}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome version 5 (before compact Physics)", env(TypeWelcome, cat([]byte{5}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome version 6 (before identity runs)", env(TypeWelcome, cat([]byte{6}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome version 7 (before Final)", env(TypeWelcome, cat([]byte{7}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome version 9", env(TypeWelcome, cat([]byte{9}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome version 3", env(TypeWelcome, cat([]byte{3}, make([]byte, 8), u32(1), []byte{0xb0, 4})...), ErrVersion},
		{"welcome zero period", env(TypeWelcome, cat([]byte{ControlVersion}, make([]byte, 8), u32(0), []byte{0xb0, 4})...), ErrMalformed},
		{"welcome small cap", env(TypeWelcome, cat([]byte{ControlVersion}, make([]byte, 8), u32(1), []byte{0x10, 0})...), ErrMalformed},
		{"welcome trailing", env(TypeWelcome, cat([]byte{ControlVersion}, make([]byte, 8), u32(1), []byte{0xb0, 4, 0})...), ErrMalformed},
		{"announce none", env(TypeAnnounce, cat(make([]byte, 8), u32(0))...), ErrMalformed},
		{"announce over id cap", env(TypeAnnounce, cat(make([]byte, 8), u32(3), make([]byte, 36))...), ErrLimit},
		{"announce count past end", env(TypeAnnounce, cat(make([]byte, 8), u32(2), make([]byte, 12))...), ErrTruncated},
		{"announce count huge", env(TypeAnnounce, cat(make([]byte, 8), u32(math.MaxUint32))...), ErrLimit},
		{"announce run past the count", env(TypeAnnounce, cat(make([]byte, 8), u32(2), run(5, 0, 2))...), ErrMalformed},
		{"announce run that goes on from the one before", env(TypeAnnounce, cat(make([]byte, 8), u32(2), run(5, 0, 0), run(6, 0, 0))...), ErrMalformed},
		{"announce run past the largest stable id", env(TypeAnnounce, cat(make([]byte, 8), u32(2), run(math.MaxUint64, 0, 1))...), ErrMalformed},
		{"announce second run cut short", env(TypeAnnounce, cat(make([]byte, 8), u32(2), run(5, 0, 0), make([]byte, 13))...), ErrTruncated},
		{"spawn state length over 8", env(TypeSpawn, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0), []byte{9, 0, 0}, make([]byte, 9))...), ErrMalformed},
		{"spawn state length not the least", env(TypeSpawn, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0), []byte{2, 0, 0}, []byte{1, 0})...), ErrMalformed},
		{"spawn state not finite", env(TypeSpawn, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0), []byte{0x80, 0, 0}, f64s(math.Inf(1)))...), ErrNonFinite},
		{"spawn state cut short", env(TypeSpawn, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0), []byte{8, 0, 0}, make([]byte, 7))...), ErrTruncated},
		{"spawn states missing", env(TypeSpawn, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0))...), ErrTruncated},
		{"final state length over 8", env(TypeFinal, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0), []byte{9, 0, 0}, make([]byte, 9))...), ErrMalformed},
		{"final state not finite", env(TypeFinal, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0), []byte{0x80, 0, 0}, f64s(math.NaN()))...), ErrNonFinite},
		{"final states missing", env(TypeFinal, cat(u32(7), make([]byte, 12), u32(1), run(5, 0, 0))...), ErrTruncated},
		{"manifest none", env(TypeManifest, cat(u32(1), u32(1), u32(1), u32(0))...), ErrMalformed},
		{"manifest over cap", env(TypeManifest, cat(u32(1), u32(1), u32(1), u32(3))...), ErrLimit},
		{"lease short", env(TypeLease, make([]byte, 11)...), ErrTruncated},
		{"lease long", env(TypeLease, make([]byte, 13)...), ErrMalformed},
		{"subscribe mode", env(TypeSubscribe, cat([]byte{3}, u32(0))...), ErrMalformed},
		{"subscribe regions over the cap", env(TypeSubscribe, cat([]byte{2}, u32(MaxRegions+1))...), ErrLimit},
		{"subscribe region short", env(TypeSubscribe, cat([]byte{2}, u32(1), f64s(0, 0, 1))...), ErrTruncated},
		{"subscribe region reversed", env(TypeSubscribe, cat([]byte{2}, u32(1), f64s(2, 0, 1, 1))...), ErrMalformed},
		{"subscribe region not finite", env(TypeSubscribe, cat([]byte{2}, u32(1), f64s(0, 0, math.Inf(1), 1))...), ErrMalformed},
		{"subscribe region NaN", env(TypeSubscribe, cat([]byte{2}, u32(1), f64s(math.NaN(), 0, 1, 1))...), ErrMalformed},
		{"hello empty token", env(TypeHello, 0, 0), ErrMalformed},
		{"hello token too long", env(TypeHello, 0x01, 0x20), ErrMalformed},
		{"hello token cut short", env(TypeHello, 3, 0, 1, 2), ErrTruncated},
		{"hello trailing", env(TypeHello, 1, 0, 1, 2), ErrMalformed},
		{"subscribe all with list", env(TypeSubscribe, cat([]byte{0}, u32(1), u32(4))...), ErrMalformed},
		{"subscribe unordered", env(TypeSubscribe, cat([]byte{1}, u32(2), u32(4), u32(4))...), ErrMalformed},
		{"keyframes over cap", env(TypeKeyframes, u32(3)...), ErrLimit},
		{"keyframes unordered", env(TypeKeyframes, cat(u32(2), u32(9), u32(9))...), ErrMalformed},
		{"received short", env(TypeReceived, make([]byte, 11)...), ErrTruncated},
		{"received long", env(TypeReceived, make([]byte, 13)...), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, n, err := ParseControl(c.b, &lim)
			if !errors.Is(err, c.want) || m != nil || n != 0 {
				t.Fatalf("m=%v n=%d err=%v, want %v", m, n, err, c.want)
			}
			d := NewControlDecoder(lim)
			if _, _, err := d.Decode(Keyframes{Islands: []uint32{1}}.Append(nil)); err != nil {
				t.Fatal(err)
			}
			typ, n, err := d.Decode(c.b)
			if !errors.Is(err, c.want) || typ != 0 || n != 0 || d.Message() != nil {
				t.Fatalf("decoder: type=%v n=%d err=%v message=%v, want %v", typ, n, err, d.Message(), c.want)
			}
		})
	}
}

// TestControlStream: messages back to back parse one after another, and
// ControlLength tells a stream reader how much to wait for.
func TestControlStream(t *testing.T) {
	lim := ControlLimits{}.WithDefaults()
	var stream []byte
	var want []Message
	for _, c := range controlCases() {
		stream = c.msg.Append(stream)
		want = append(want, c.msg)
	}
	for i := 0; len(stream) > 0; i++ {
		n, err := ControlLength(stream, &lim)
		if err != nil {
			t.Fatal(err)
		}
		m, used, err := ParseControl(stream, &lim)
		if err != nil || used != n {
			t.Fatalf("message %d: used %d, length %d, %v", i, used, n, err)
		}
		if !reflect.DeepEqual(m, want[i]) {
			t.Fatalf("message %d differs", i)
		}
		stream = stream[used:]
	}
}

// TestControlDecoder: one decoder reads the whole stream of control cases
// twice — the second time into the storage the first pass grew — and every
// message equals what ParseControl reads; a shorter message after a longer
// one of the same type holds exactly its own entries.
func TestControlDecoder(t *testing.T) {
	var stream []byte
	for _, c := range controlCases() {
		stream = c.msg.Append(stream)
	}
	d := NewControlDecoder(ControlLimits{})
	for pass := range 2 {
		i := 0
		for b := stream; len(b) > 0; i++ {
			typ, n, err := d.Decode(b)
			want := controlCases()[i].msg
			if err != nil || n != want.Size() || typ != want.Type() || TypeOf(d.Message()) != typ {
				t.Fatalf("pass %d message %d: type=%v n=%d err=%v", pass, i, typ, n, err)
			}
			if !reflect.DeepEqual(d.Message(), want) {
				t.Fatalf("pass %d message %d: got %#v want %#v", pass, i, d.Message(), want)
			}
			b = b[n:]
		}
	}
	long := Keyframes{Islands: []uint32{1, 2, 3}}
	short := Keyframes{Islands: []uint32{5}}
	for _, m := range []Keyframes{long, short} {
		if _, _, err := d.Decode(m.Append(nil)); err != nil {
			t.Fatal(err)
		}
		if got := d.Message(); !reflect.DeepEqual(got, m) {
			t.Fatalf("got %#v want %#v", got, m)
		}
	}
	if TypeOf(nil) != 0 {
		t.Fatal("TypeOf(nil) is a type")
	}
}

// TestControlDecoderAllocs: once its storage has grown, the decoder reads
// the messages that flow all the time without allocating.
func TestControlDecoderAllocs(t *testing.T) {
	var stream []byte
	for _, c := range controlCases() {
		switch c.msg.Type() {
		case TypeReceived, TypeKeyframes:
			stream = c.msg.Append(stream)
		}
	}
	d := NewControlDecoder(ControlLimits{})
	read := func() {
		for b := stream; len(b) > 0; {
			_, n, err := d.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
	}
	read()
	if a := testing.AllocsPerRun(100, read); a != 0 {
		t.Fatalf("%v allocations per stream of %d bytes", a, len(stream))
	}
}

// FuzzParseControl: any input parses or fails with a typed error; a parsed
// message re-encodes to exactly the bytes it consumed, and what it holds
// respects the limits. A ControlDecoder kept across inputs — its storage
// reused — reads every input exactly as ParseControl does.
func FuzzParseControl(f *testing.F) {
	for _, c := range controlCases() {
		f.Add(c.msg.Append(nil))
	}
	files, _ := filepath.Glob(filepath.Join(controlGoldenDir, "*.bin"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	lim := ControlLimits{MaxMessage: 4096, MaxIDs: 64, MaxMembers: 64, MaxIslands: 64}.WithDefaults()
	d := NewControlDecoder(lim)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := ParseControl(b, &lim)
		typ, dn, derr := d.Decode(b)
		if fmt.Sprint(err) != fmt.Sprint(derr) || dn != n || !reflect.DeepEqual(d.Message(), m) || (err == nil && typ != m.Type()) {
			t.Fatalf("decoder: type=%v n=%d err=%v; ParseControl: n=%d err=%v", typ, dn, derr, n, err)
		}
		if err != nil {
			if m != nil || n != 0 || !isCodecError(err) {
				t.Fatalf("m=%v n=%d err=%v", m, n, err)
			}
			return
		}
		if n > len(b) || n-4 > lim.MaxMessage {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		if re := m.Append(nil); !bytes.Equal(re, b[:n]) || m.Size() != n {
			t.Fatalf("re-encoding differs")
		}
	})
}

// TestPhysicsRejects: each value outside its documented range rejects the
// whole message as malformed; caps reject as limits.
func TestPhysicsRejects(t *testing.T) {
	lim := ControlLimits{}.WithDefaults()
	nan := math.NaN()
	for _, c := range []struct {
		name string
		mod  func(*Physics)
		want error
	}{
		{"step 0", func(m *Physics) { m.Step = 0 }, ErrMalformed},
		{"step over 1 s", func(m *Physics) { m.Step = 1_000_001 }, ErrMalformed},
		{"no iterations", func(m *Physics) { m.Iterations = 0 }, ErrMalformed},
		{"too many iterations", func(m *Physics) { m.Iterations = 1001 }, ErrMalformed},
		{"gravity NaN", func(m *Physics) { m.Gravity[1] = nan }, ErrMalformed},
		{"gravity Inf", func(m *Physics) { m.Gravity[0] = math.Inf(1) }, ErrMalformed},
		{"damping 0", func(m *Physics) { m.Damping = 0 }, ErrMalformed},
		{"damping over 1", func(m *Physics) { m.Damping = 1.5 }, ErrMalformed},
		{"no bodies", func(m *Physics) { m.Bodies, m.Joints = nil, nil }, ErrMalformed},
		{"zero mass", func(m *Physics) { m.Bodies[1].Mass = 0 }, ErrMalformed},
		{"negative moment", func(m *Physics) { m.Bodies[0].Moment = -1 }, ErrMalformed},
		{"NaN mass", func(m *Physics) { m.Bodies[2].Mass = nan }, ErrMalformed},
		{"box without height", func(m *Physics) { m.Bodies[1].Height = 0 }, ErrMalformed},
		{"height without width", func(m *Physics) { m.Bodies[0].Height = 0.2 }, ErrMalformed},
		{"negative width", func(m *Physics) { m.Bodies[1].Width = -0.5 }, ErrMalformed},
		{"friction NaN", func(m *Physics) { m.Bodies[1].Friction = nan }, ErrMalformed},
		{"friction -0", func(m *Physics) { m.Bodies[0].Friction = math.Copysign(0, -1) }, ErrMalformed},
		{"segment end Inf", func(m *Physics) { m.Static[0].B[0] = math.Inf(-1) }, ErrMalformed},
		{"segment negative radius", func(m *Physics) { m.Static[0].Radius = -0.1 }, ErrMalformed},
		{"segment negative friction", func(m *Physics) { m.Static[0].Friction = -1 }, ErrMalformed},
		{"unknown kind", func(m *Physics) { m.Joints[0].Kind = 3 }, ErrMalformed},
		{"end A out of range", func(m *Physics) { m.Joints[1].A = 5 }, ErrMalformed},
		{"end A static", func(m *Physics) { m.Joints[1].A = NoBody }, ErrMalformed},
		{"end B out of range", func(m *Physics) { m.Joints[1].B = 5 }, ErrMalformed},
		{"next ends past the bodies", func(m *Physics) { m.Bodies = m.Bodies[:4] }, ErrMalformed},
		{"both ends one body", func(m *Physics) { m.Joints[1].B = 0 }, ErrMalformed},
		{"anchor NaN", func(m *Physics) { m.Joints[2].AnchorB[0] = nan }, ErrMalformed},
		{"pivot with a distance", func(m *Physics) { m.Joints[0].Max = 0.1 }, ErrMalformed},
		{"pivot with -0", func(m *Physics) { m.Joints[0].Min = math.Copysign(0, -1) }, ErrMalformed},
		{"pin min != max", func(m *Physics) { m.Joints[1].Max = 0.6 }, ErrMalformed},
		{"pin negative", func(m *Physics) { m.Joints[1].Min, m.Joints[1].Max = -0.5, -0.5 }, ErrMalformed},
		{"slide min > max", func(m *Physics) { m.Joints[2].Min = 0.7 }, ErrMalformed},
		{"slide negative min", func(m *Physics) { m.Joints[2].Min = -0.1 }, ErrMalformed},
	} {
		m := goldenPhysics()
		c.mod(&m)
		_, _, err := ParseControl(m.Append(nil), &lim)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// The compact coding: physics.bin's body 0 flag is at offset 51, bodies
	// 1 and 2 follow whole, body 3 (as body 2) is one byte at 174 and body
	// 4 one at 175; joint 0's flags are at 180, joint 1's at 238, joint 2
	// (the next ends, its own shape) at 296 with its shape from 297, joint
	// 3 (as joint 2, the next ends) one byte at 346.
	golden := goldenPhysics().Append(nil)
	if golden[51] != 0 || golden[174] != bodySame || golden[175] != bodySame || golden[180] != 0 || golden[238] != 0 ||
		golden[296] != jointNext || golden[346] != jointShaped|jointNext {
		t.Fatalf("physics.bin's layout moved: % x", golden)
	}
	patch := func(at int, with ...byte) func([]byte) []byte {
		return func(b []byte) []byte { b[at] = with[0]; return append(b[:at+1], append(with[1:], b[at+1:]...)...) }
	}
	for _, c := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"body flag 2", patch(51, 2)},
		{"first body as the one before", patch(51, bodySame)},
		{"a body written out as the one before", patch(174, append([]byte{0}, golden[134:174]...)...)},
		{"joint flag bit 2", patch(238, 4)},
		{"first joint coded against none", patch(180, jointShaped)},
		{"a joint written out as the one before", patch(346, append([]byte{jointNext}, golden[297:346]...)...)},
		{"ends written out that follow the joint before", patch(296, append([]byte{0}, 1, 0, 0, 0, 2, 0, 0, 0)...)},
	} {
		b := c.edit(slices.Clone(golden))
		binary.LittleEndian.PutUint32(b, uint32(len(b)-4)) // the envelope's length
		if _, _, err := ParseControl(b, &lim); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want %v", c.name, err, ErrMalformed)
		}
	}
	m := goldenPhysics()
	for _, small := range []ControlLimits{{MaxMembers: 2}, {MaxJoints: 2}, {MaxSegments: -1}} {
		lim := small.WithDefaults()
		if small.MaxSegments < 0 {
			lim.MaxSegments = 0
		}
		if _, _, err := ParseControl(m.Append(nil), &lim); !errors.Is(err, ErrLimit) {
			t.Errorf("over the caps %+v: %v", small, err)
		}
	}
	// A body count larger than the bytes present is refused before anything
	// is allocated for it.
	b := m.Append(nil)
	binary.LittleEndian.PutUint32(b[ControlHeaderSize+physicsHead-4:], 1<<12)
	if _, _, err := ParseControl(b, &lim); !errors.Is(err, ErrTruncated) {
		t.Errorf("body count past the end: %v", err)
	}
	if !TypePhysics.FromServer() || TypePhysics.String() != "physics" {
		t.Errorf("type 0x09: from server %v, %q", TypePhysics.FromServer(), TypePhysics)
	}
}

// TestParseControlNilLimits: a nil *ControlLimits means the defaults, not
// a crash.
func TestParseControlNilLimits(t *testing.T) {
	b := Lease{Island: 3, Epoch: 9, Owner: 1}.Append(nil)
	m, n, err := ParseControl(b, nil)
	if err != nil || n != len(b) || m.(Lease).Epoch != 9 {
		t.Fatalf("ParseControl(nil limits) = %v, %d, %v", m, n, err)
	}
	if _, err := ControlLength(b[:3], nil); err == nil {
		t.Fatal("a truncated envelope accepted")
	}
}

// TestPhysicsCacheRule: the table of held descriptions starts empty, adds
// each new digest once, lets the oldest go past 256 descriptions or past
// 1 MiB of the messages that brought them, and empties on Reset (a
// Welcome). A PhysicsRef resolves to the held description under its own
// island, topology and config; the digest leaves those three out.
func TestPhysicsCacheRule(t *testing.T) {
	p := goldenPhysics()
	enc := p.Append(nil)
	other := p
	other.Island, other.Topology, other.Config = 99, 5, 6
	if PhysicsDigest(other.Append(nil)) != PhysicsDigest(enc) {
		t.Fatal("islands built alike have different digests")
	}
	heavier := p
	heavier.Bodies = append([]BodyMass{{Mass: 3, Moment: 1}}, p.Bodies[1:]...)
	if PhysicsDigest(heavier.Append(nil)) == PhysicsDigest(enc) {
		t.Fatal("a different description has the same digest")
	}

	var c PhysicsCache
	d := PhysicsDigest(enc)
	if c.Holds(d) {
		t.Fatal("an empty table holds a description")
	}
	c.Add(d, len(enc), &p)
	got, ok := c.Get(PhysicsRef{Island: 8, Topology: 1, Config: 1, Digest: d})
	if !ok || got.Island != 8 || got.Topology != 1 || got.Config != 1 || !bytes.Equal(got.Append(nil)[physicsDescAt:], enc[physicsDescAt:]) {
		t.Fatalf("resolved %+v, %v", got, ok)
	}
	// By count: the 257th description pushes the first out, and adding a
	// held one again changes nothing.
	for i := uint64(1); i < PhysicsCacheEntries; i++ {
		c.Add(d+i, 100, nil)
	}
	c.Add(d, len(enc), &p)
	if !c.Holds(d) {
		t.Fatal("256 descriptions: the first went")
	}
	c.Add(d+PhysicsCacheEntries, 100, nil)
	if c.Holds(d) || !c.Holds(d+1) || !c.Holds(d+PhysicsCacheEntries) {
		t.Fatal("the 257th description did not push out exactly the first")
	}
	// By bytes: descriptions of 300 kB each, four of them over 1 MiB.
	c.Reset()
	if c.Holds(d + 1) {
		t.Fatal("Reset kept a description")
	}
	for i := range uint64(4) {
		c.Add(i, 300_000, nil)
	}
	if c.Holds(0) || !c.Holds(1) || !c.Holds(3) {
		t.Fatal("past 1 MiB the oldest did not go")
	}
	if _, ok := c.Get(PhysicsRef{Digest: 1}); ok {
		t.Fatal("a description added without its body resolved")
	}
}

// TestPhysicsChainIsCompact: a chain of identical links on identical pivots
// codes each link after the first two in a byte for its body and a byte for
// its joint, and reads back as the same description.
func TestPhysicsChainIsCompact(t *testing.T) {
	const n = 240
	m := Physics{Island: 1, Topology: 1, Config: 1, Step: 4_167, Iterations: 10, Gravity: [2]float64{0, -9.8}, Damping: 1,
		Bodies: make([]BodyMass, n), Joints: make([]JointSpec, n)}
	for i := range n {
		m.Bodies[i] = BodyMass{Mass: 0.2, Moment: 0.004, Width: 0.25, Height: 0.05, Friction: 0.7}
		m.Joints[i] = JointSpec{Kind: JointPivot, A: uint32(i), B: uint32(i - 1), AnchorA: [2]float64{-0.125, 0}, AnchorB: [2]float64{0.125, 0}}
	}
	m.Joints[0] = JointSpec{Kind: JointPivot, A: 0, B: NoBody, AnchorA: [2]float64{-0.125, 0}, AnchorB: [2]float64{0, 30}}
	b := m.Append(nil)
	// head, one body written out, n − 1 a byte each; the first two joints
	// written out, n − 2 a byte each; no segments
	want := ControlHeaderSize + physicsHead + (1 + bodySize) + (n - 1) + 4 + 2*(1+jointEnds+jointShape) + (n - 2) + 4
	if len(b) != want || m.Size() != want {
		t.Fatalf("%d bytes (Size %d), want %d", len(b), m.Size(), want)
	}
	lim := ControlLimits{}.WithDefaults()
	got, k, err := ParseControl(b, &lim)
	if err != nil || k != len(b) || !reflect.DeepEqual(got, m) {
		t.Fatalf("read back %d of %d bytes: %v", k, len(b), err)
	}
}

// TestIdentityRuns: identity lists of every shape — runs long and short,
// generations changing inside a run of stable ids, the largest stable id,
// runs longer than one run holds — read back as written, in the fewest
// runs, and an Announce of a 240-body chain numbered in turn carries its
// identities in one 14-byte run.
func TestIdentityRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	lim := ControlLimits{MaxMessage: 4 << 20, MaxIDs: 1 << 17, MaxMembers: 1 << 17}.WithDefaults()
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		if trial%50 == 0 {
			n = maxRunMore + 1 + rng.IntN(3) // past one run's length
		}
		ids := make([]island.MemberID, n)
		next := rng.Uint64N(1000)
		if trial%7 == 0 && trial%50 != 0 {
			next = math.MaxUint64 - uint64(rng.IntN(3))
		}
		for i := range ids {
			ids[i] = island.MemberID{Stable: next, Generation: uint32(rng.IntN(2))}
			if trial%50 == 0 || rng.IntN(4) > 0 {
				ids[i].Generation = 0
				next++
			} else {
				next += 1 + rng.Uint64N(3)
			}
		}
		want := 0 // the fewest runs
		for i := range ids {
			if i == 0 || i%(maxRunMore+1) == 0 || ids[i].Generation != ids[i-1].Generation ||
				ids[i-1].Stable == math.MaxUint64 || ids[i].Stable != ids[i-1].Stable+1 {
				want++
			}
		}
		m := Announce{Time: 5, IDs: ids}
		b := m.Append(nil)
		if len(b) != m.Size() {
			t.Fatalf("trial %d: %d bytes, Size %d", trial, len(b), m.Size())
		}
		if runs := (len(b) - ControlHeaderSize - idListHead) / idRunSize; runs != want {
			t.Fatalf("trial %d: %d runs, want %d", trial, runs, want)
		}
		got, k, err := ParseControl(b, &lim)
		if err != nil || k != len(b) || !reflect.DeepEqual(got, m) {
			t.Fatalf("trial %d: read back %d of %d bytes: %v", trial, k, len(b), err)
		}
	}
	chain := make([]island.MemberID, 240)
	for i := range chain {
		chain[i] = island.MemberID{Stable: uint64(1000 + i), Generation: 1}
	}
	if n := (Announce{Time: 1, IDs: chain}).Size(); n != ControlHeaderSize+idListHead+idRunSize {
		t.Fatalf("a 240-body chain's Announce is %d bytes", n)
	}
}

// TestSpawnChainIsCompact: a chain of 240 links at rest, a quarter metre
// apart, spawns in about ten bytes a link — three bytes of lengths and the
// bytes in which its x differs from the link before — and reads back bit
// for bit.
func TestSpawnChainIsCompact(t *testing.T) {
	const n = 240
	m := Spawn{Island: 1, Time: 1, Segment: 1, Members: make([]island.Member, n)}
	for i := range m.Members {
		m.Members[i] = island.Member{ID: island.MemberID{Stable: uint64(i + 1)},
			State: island.State{X: 0.125 + 0.25*float64(i), Y: 30}}
	}
	b := m.Append(nil)
	if len(b) != m.Size() || len(b) > ControlHeaderSize+spawnHead+idRunSize+10*n {
		t.Fatalf("%d bytes (Size %d) for %d links", len(b), m.Size(), n)
	}
	lim := ControlLimits{}.WithDefaults()
	got, k, err := ParseControl(b, &lim)
	if err != nil || k != len(b) || !reflect.DeepEqual(got, m) {
		t.Fatalf("read back %d of %d bytes: %v", k, len(b), err)
	}
	t.Logf("%d bytes, %.1f a link", len(b), float64(len(b))/n)
}
