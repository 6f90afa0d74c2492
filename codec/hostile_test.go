package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func goldenDatagrams(t testing.TB) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.bin"))
	if len(files) == 0 {
		t.Fatal("no golden datagrams")
	}
	out := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

func isCodecError(err error) bool { return Reason(err) != "" && !errors.Is(err, ErrEmptyFrame) }

// TestTruncationSweep: every strict prefix of every golden datagram is
// rejected with a typed error, and so is every extension by trailing bytes.
func TestTruncationSweep(t *testing.T) {
	dec, _ := NewFloatDecoder(Config{MaxDatagram: MaxMaxDatagram})
	for name, b := range goldenDatagrams(t) {
		for i := range b {
			frags, err := dec.Decode(b[:i])
			if err == nil || frags != nil || !isCodecError(err) {
				t.Fatalf("%s prefix %d: frags=%d err=%v", name, i, len(frags), err)
			}
		}
		for _, tail := range [][]byte{{0}, {0, 0}, b[6:]} {
			if _, err := dec.Decode(append(bytes.Clone(b), tail...)); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s with %d trailing bytes: %v", name, len(tail), err)
			}
		}
	}
}

// TestBitFlipSweep: flipping any single bit of a golden datagram yields a
// typed error or a datagram that re-encodes to exactly the flipped bytes.
func TestBitFlipSweep(t *testing.T) {
	dec, _ := NewFloatDecoder(Config{})
	for name, b := range goldenDatagrams(t) {
		buf := bytes.Clone(b)
		for i := range buf {
			for bit := 0; bit < 8; bit++ {
				buf[i] ^= 1 << bit
				frags, err := dec.Decode(buf)
				if err != nil {
					if !isCodecError(err) {
						t.Fatalf("%s byte %d bit %d: untyped error %v", name, i, bit, err)
					}
				} else if re := reencode(frags); !bytes.Equal(re, buf) {
					t.Fatalf("%s byte %d bit %d: decoded but re-encodes differently", name, i, bit)
				}
				buf[i] ^= 1 << bit
			}
		}
	}
}

func reencode(frags []Fragment) []byte {
	out := AppendDatagramHeader(nil, uint8(len(frags)))
	for i := range frags {
		out = AppendFragment(out, &frags[i].Header, members(frags[i].Raw))
	}
	return out
}

// TestDecodeRejects names the reason for each kind of bad input.
func TestDecodeRejects(t *testing.T) {
	good := goldenDatagrams(t)["small.00.bin"]
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	const hdr = DatagramHeaderSize + RecordLengthSize // start of the fragment header
	put32 := func(b []byte, off int, v uint32) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	put16 := func(b []byte, off int, v uint16) []byte { binary.LittleEndian.PutUint16(b[off:], v); return b }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, ErrTruncated},
		{"short header", []byte("ISYN\x01"), ErrTruncated},
		{"bad magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), ErrBadMagic},
		{"version 0", mut(func(b []byte) []byte { b[4] = 0; return b }), ErrVersion},
		{"version 2", mut(func(b []byte) []byte { b[4] = 2; return b }), ErrVersion},
		{"zero records", mut(func(b []byte) []byte { b[5] = 0; return b }), ErrMalformed},
		{"more records than present", mut(func(b []byte) []byte { b[5] = 2; return b }), ErrTruncated},
		{"record length past end", mut(func(b []byte) []byte { return put16(b, 6, 0xFFFF) }), ErrTruncated},
		{"record length too short", mut(func(b []byte) []byte { return put16(b, 6, 10) }), ErrMalformed},
		{"record length not header+members", mut(func(b []byte) []byte { put16(b, 6, FragmentHeaderSize+MemberSize*3-1); return b }), ErrMalformed},
		{"unknown flags", mut(func(b []byte) []byte { b[hdr+36] = 0x04; return b }), ErrMalformed},
		{"zero total", mut(func(b []byte) []byte { return put32(b, hdr+37, 0) }), ErrMalformed},
		{"total over cap", mut(func(b []byte) []byte { return put32(b, hdr+37, DefaultMaxMembers+1) }), ErrLimit},
		{"huge total", mut(func(b []byte) []byte { return put32(b, hdr+37, 0xFFFFFFFF) }), ErrLimit},
		{"zero fragment count", mut(func(b []byte) []byte { return put16(b, hdr+43, 0) }), ErrMalformed},
		{"fragment count over cap", mut(func(b []byte) []byte { return put16(b, hdr+43, DefaultMaxFragments+1) }), ErrLimit},
		{"index >= count", mut(func(b []byte) []byte { return put16(b, hdr+41, 1) }), ErrMalformed},
		{"zero member count", mut(func(b []byte) []byte { return put16(b, hdr+49, 0) }), ErrMalformed},
		{"range past total", mut(func(b []byte) []byte { return put32(b, hdr+45, 1) }), ErrMalformed},
		{"range wraps uint32", mut(func(b []byte) []byte { return put32(b, hdr+45, 0xFFFFFFFF) }), ErrMalformed},
		{"NaN x", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[hdr+FragmentHeaderSize+12:], 0x7FF8000000000001)
			return b
		}), ErrNonFinite},
		{"-Inf angvel", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[hdr+FragmentHeaderSize+2*MemberSize+52:], 0xFFF0000000000000)
			return b
		}), ErrNonFinite},
		{"over datagram cap", make([]byte, DefaultMaxDatagram+1), ErrLimit},
	}
	dec, _ := NewFloatDecoder(Config{})
	for _, c := range cases {
		frags, err := dec.Decode(c.in)
		if !errors.Is(err, c.want) || frags != nil {
			t.Errorf("%s: frags=%d err=%v, want %v", c.name, len(frags), err, c.want)
		}
		var ce *Error
		if err != nil && !errors.As(err, &ce) {
			t.Errorf("%s: error is not a *codec.Error", c.name)
		}
	}
	// A bad second record poisons the whole datagram: no first record leaks.
	two := encodeAll(t, Config{}, coalescedFrames()[:2])[0]
	two[len(two)-1] = 0xFF
	two[len(two)-2] = 0xF0 // last float becomes -Inf/NaN
	if frags, err := dec.Decode(two); err == nil || frags != nil {
		t.Errorf("bad second record: frags=%d err=%v", len(frags), err)
	}
}

func TestParseMember(t *testing.T) {
	f := smallFrame()
	b := AppendMember(nil, &f.Members[1])
	m, n, err := ParseMember(b)
	if err != nil || n != MemberSize || m != f.Members[1] {
		t.Fatalf("ParseMember = %+v, %d, %v", m, n, err)
	}
	for i := range b {
		if _, _, err := ParseMember(b[:i]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix %d: %v", i, err)
		}
	}
	bad := f.Members[1]
	bad.State.AngVel = math.Inf(-1)
	if _, _, err := ParseMember(AppendMember(nil, &bad)); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("non-finite member: %v", err)
	}
}
