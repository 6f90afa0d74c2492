package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// streamCopyGolden is the golden copy: the Lease of lease.bin (island 7,
// epoch 2, sender 3) as the stream's bytes 4096 … 4112.
func streamCopyGolden() StreamCopy {
	return StreamCopy{Offset: 4096, Bytes: Lease{Island: 7, Epoch: 2, Owner: 3}.Append(nil)}
}

// TestStreamCopyGolden: the copy's bytes, field by field, are the golden's,
// and they read back as the copy.
func TestStreamCopyGolden(t *testing.T) {
	c := streamCopyGolden()
	b := c.Append(nil)
	want := []byte{'I', 'S', 'Y', 'C', 1, 0x00, 0x10, 0, 0, 0, 0, 0, 0}
	want = binary.LittleEndian.AppendUint32(want, 0) // the check, set below
	want = append(want, 0x0d, 0, 0, 0, 0x04, 7, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0)
	binary.LittleEndian.PutUint32(want[13:], streamCopyCheck(want))
	if !bytes.Equal(b, want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
	txt := fmt.Sprintf("A stream copy (codec.StreamCopy): magic ISYC, version 1, offset %d, check %#08x, then the %d stream bytes it copies — a Lease of island 7, epoch 2, sender 3, the bytes of control/lease.bin.\n\n%s",
		c.Offset, binary.LittleEndian.Uint32(b[13:]), len(c.Bytes), hex.Dump(b))
	checkGolden(t, filepath.Join(goldenDir, "control", "stream-copy.bin"), b, txt)
	got, err := ParseStreamCopy(b)
	if err != nil || got.Offset != c.Offset || !bytes.Equal(got.Bytes, c.Bytes) || !IsStreamCopy(b) {
		t.Fatalf("parsed %+v %v", got, err)
	}
	if IsStreamCopy([]byte("ISYN\x03")) {
		t.Fatal("a frame datagram taken for a copy")
	}
}

// TestStreamCopyRefused: every way a copy can be wrong is refused with its
// sentinel.
func TestStreamCopyRefused(t *testing.T) {
	good := streamCopyGolden().Append(nil)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	recheck := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[13:], streamCopyCheck(b))
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:3], ErrTruncated},
		{"magic", edit(func(b []byte) []byte { b[3] = 'N'; return b }), ErrBadMagic},
		{"version", edit(func(b []byte) []byte { b[4] = 2; return recheck(b) }), ErrVersion},
		{"no bytes", recheck(bytes.Clone(good[:StreamCopyHeaderSize])), ErrTruncated},
		{"check", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrMalformed},
		{"offset flipped", edit(func(b []byte) []byte { b[6] ^= 1; return b }), ErrMalformed},
		{"past 2^64", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[5:], ^uint64(0)-uint64(len(b)-StreamCopyHeaderSize)+2)
			return recheck(b)
		}), ErrMalformed},
		{"over the cap", recheck(append(bytes.Clone(good), make([]byte, MaxStreamCopy)...)), ErrLimit},
	} {
		if _, err := ParseStreamCopy(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The last byte a copy can end on is stream offset 2⁶⁴ − 1.
	last := edit(func(b []byte) []byte {
		binary.LittleEndian.PutUint64(b[5:], ^uint64(0)-uint64(len(b)-StreamCopyHeaderSize)+1)
		return recheck(b)
	})
	if _, err := ParseStreamCopy(last); err != nil {
		t.Fatalf("a run ending at the last offset: %v", err)
	}
}

// FuzzStreamCopy: any input parses or fails with a typed error, and one
// that parses re-encodes to the same bytes.
func FuzzStreamCopy(f *testing.F) {
	f.Add(streamCopyGolden().Append(nil))
	f.Add(StreamCopy{Offset: 1 << 40, Bytes: []byte{1}}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseStreamCopy(b)
		if err != nil {
			if !isCodecError(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := c.Append(nil); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded % x, read % x", again, b)
		}
	})
}
