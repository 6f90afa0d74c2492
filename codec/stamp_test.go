package codec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
)

// stampGolden is the design notes' interaction: a view at r = 1.40 s of
// playback generation 3, 90 ms old, in which island 1 (A) is valid and
// island 2 (B) is held stale.
func stampGolden() ViewStamp {
	return ViewStamp{Timeline: 0x0102030405060708, R: 1_400_000, Generation: 3, Age: 90_000,
		Islands: []IslandStamp{{Island: 1, Epoch: 2, Segment: 0, Valid: true}, {Island: 2, Epoch: 1, Segment: 4}}}
}

// TestViewStampGolden: the stamp's bytes, field by field, are the golden's,
// and they read back as the stamp.
func TestViewStampGolden(t *testing.T) {
	s := stampGolden()
	b := s.Append(nil)
	want := []byte{
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // timeline
		0xc0, 0x5c, 0x15, 0, 0, 0, 0, 0, // R 1 400 000 µs
		3, 0, 0, 0, // generation
		0x90, 0x5f, 0x01, 0, 0, 0, 0, 0, // age 90 000 µs
		2, 0, // islands
		1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, // A: epoch 2, segment 0, valid
		2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0, // B: epoch 1, segment 4, not valid
	}
	if !bytes.Equal(b, want) || len(b) != s.Size() {
		t.Fatalf("got % x\nwant % x", b, want)
	}
	txt := fmt.Sprintf("A view stamp (codec.ViewStamp): timeline %#x, r %d µs, generation %d, age %d µs; island 1 epoch 2 segment 0 valid; island 2 epoch 1 segment 4 not valid (held stale).\n\n%s",
		s.Timeline, s.R, s.Generation, s.Age, hex.Dump(b))
	checkGolden(t, filepath.Join(goldenDir, "stamp", "stamp.bin"), b, txt)
	var got ViewStamp
	if n, err := ParseViewStamp(b, &got); err != nil || n != len(b) || !reflect.DeepEqual(got, s) {
		t.Fatalf("parsed %d: %+v %v", n, got, err)
	}
}

// TestViewStampRefused: a stamp cut short, with too many islands, a negative
// age, islands out of order or unknown flags is refused with its error.
func TestViewStampRefused(t *testing.T) {
	good := stampGolden()
	b := good.Append(nil)
	mut := func(f func(b []byte)) []byte { c := bytes.Clone(b); f(c); return c }
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"empty":           {nil, ErrTruncated},
		"head cut":        {b[:ViewStampHeadSize-1], ErrTruncated},
		"island cut":      {b[:len(b)-1], ErrTruncated},
		"negative age":    {mut(func(b []byte) { b[27] = 0x80 }), ErrMalformed},
		"too many":        {mut(func(b []byte) { b[28], b[29] = 0x01, 0x10 }), ErrLimit},
		"not ascending":   {mut(func(b []byte) { b[ViewStampHeadSize+IslandStampSize] = 1 }), ErrMalformed},
		"unknown flag":    {mut(func(b []byte) { b[ViewStampHeadSize+12] = 3 }), ErrMalformed},
		"repeated island": {mut(func(b []byte) { b[ViewStampHeadSize] = 2 }), ErrMalformed},
	}
	for name, c := range cases {
		var s ViewStamp
		if _, err := ParseViewStamp(c.b, &s); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// FuzzViewStamp: any bytes parse to a stamp that re-encodes to the bytes
// it took, or to an error; never a panic.
func FuzzViewStamp(f *testing.F) {
	s := stampGolden()
	f.Add(s.Append(nil))
	f.Add((&ViewStamp{}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s ViewStamp
		n, err := ParseViewStamp(b, &s)
		if err != nil {
			return
		}
		if !bytes.Equal(s.Append(nil), b[:n]) {
			t.Fatalf("% x re-encodes to % x", b[:n], s.Append(nil))
		}
	})
}
