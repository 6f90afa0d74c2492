package transport

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// readReady reads what the join has brought so far without waiting.
func readReady(t *testing.T, j *streamJoin) []byte {
	t.Helper()
	j.mu.Lock()
	n := len(j.ready)
	j.mu.Unlock()
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(j, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamJoinCopyFirst: a copy of bytes the stream has not brought yet
// is read at once; the stream's own bytes then only confirm it, and what
// follows them is read as usual.
func TestStreamJoinCopyFirst(t *testing.T) {
	j := newStreamJoin()
	if err := j.fromStream([]byte("welcome|")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); string(got) != "welcome|" {
		t.Fatalf("read %q", got)
	}
	// The stream's packet with "physics|" is lost; its copy arrives.
	if err := j.fromCopy(8, []byte("physics|")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); string(got) != "physics|" {
		t.Fatalf("read %q from the copy", got)
	}
	// The stream's retransmission, with the next message behind it.
	if err := j.fromStream([]byte("physics|lease|")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); string(got) != "lease|" {
		t.Fatalf("read %q after the stream caught up", got)
	}
	if s := j.counts(); s.Used != 1 || s.Late != 0 {
		t.Fatalf("counts %+v", s)
	}
	// Copies of what was read already change nothing.
	if err := j.fromCopy(8, []byte("physics|")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); got != nil || j.counts().Late != 1 {
		t.Fatalf("a late copy read %q, counts %+v", got, j.counts())
	}
}

// TestStreamJoinAhead: a copy past a gap waits for the gap to fill, from
// the stream or from another copy, and is read then, in stream order.
func TestStreamJoinAhead(t *testing.T) {
	j := newStreamJoin()
	if err := j.fromCopy(4, []byte("efgh")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); got != nil {
		t.Fatalf("read %q past a gap", got)
	}
	if err := j.fromCopy(0, []byte("abcd")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); string(got) != "abcdefgh" {
		t.Fatalf("read %q", got)
	}
	if err := j.fromStream([]byte("abcdefghij")); err != nil {
		t.Fatal(err)
	}
	if got := readReady(t, j); string(got) != "ij" {
		t.Fatalf("read %q", got)
	}
}

// TestStreamJoinDiffers: bytes that differ from a copy's at the same
// position end the join with ErrCopyDiffers, whichever came first.
func TestStreamJoinDiffers(t *testing.T) {
	j := newStreamJoin()
	_ = j.fromCopy(0, []byte("abcd"))
	if err := j.fromStream([]byte("abXd")); !errors.Is(err, ErrCopyDiffers) {
		t.Fatalf("stream against copy: %v", err)
	}
	if _, err := j.Read(make([]byte, 8)); !errors.Is(err, ErrCopyDiffers) {
		t.Fatalf("read after: %v", err)
	}
	j = newStreamJoin()
	_ = j.fromCopy(0, []byte("abcd"))
	if err := j.fromCopy(2, []byte("cX")); !errors.Is(err, ErrCopyDiffers) {
		t.Fatalf("copy against copy: %v", err)
	}
	// A copy held past a gap is checked when the gap fills. (Bytes the
	// stream brought first are not: a copy of them is not read.)
	j = newStreamJoin()
	_ = j.fromCopy(6, []byte("gX"))
	_ = j.fromStream([]byte("abc"))
	if err := j.fromCopy(3, []byte("defgh")); !errors.Is(err, ErrCopyDiffers) {
		t.Fatalf("held copy against copy: %v", err)
	}
}

// TestStreamJoinCaps: copies too far ahead of the stream, and past the
// count of copies held, are let go and counted; the stream still brings
// every byte.
func TestStreamJoinCaps(t *testing.T) {
	j := newStreamJoin()
	if err := j.fromCopy(joinAheadCap, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := j.fromCopy(0, make([]byte, joinAheadCap+1)); err != nil {
		t.Fatal(err)
	}
	for i := range joinAheadKept + 1 {
		_ = j.fromCopy(uint64(10+2*i), []byte("y"))
	}
	if s := j.counts(); s.Dropped != 3 || s.Used != 0 {
		t.Fatalf("counts %+v, want 3 dropped", s)
	}
	if len(j.ahead) != joinAheadKept {
		t.Fatalf("%d copies held", len(j.ahead))
	}
}

// TestStreamJoinEnd: the stream's end is read once every brought byte is.
func TestStreamJoinEnd(t *testing.T) {
	j := newStreamJoin()
	_ = j.fromStream([]byte("ab"))
	j.end(nil)
	b, err := io.ReadAll(j)
	if string(b) != "ab" || err != nil {
		t.Fatalf("read %q, %v", b, err)
	}
	if err := j.fromCopy(2, []byte("c")); err != nil {
		t.Fatalf("a copy after the end: %v", err)
	}
}

// TestStreamJoinModel: a seeded model — a stream cut into random chunks,
// copies of random runs of it arriving in random order among them, some
// lost — always reads exactly the stream's bytes.
func TestStreamJoinModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		stream := make([]byte, 1+r.IntN(4000))
		for i := range stream {
			stream[i] = byte(r.IntN(256))
		}
		type event struct {
			copy     bool
			off, end int
		}
		var evs []event
		for off := 0; off < len(stream); {
			end := min(len(stream), off+1+r.IntN(300))
			evs = append(evs, event{false, off, end})
			off = end
		}
		var copies []event
		for range r.IntN(20) {
			off := r.IntN(len(stream))
			copies = append(copies, event{true, off, min(len(stream), off+1+r.IntN(400))})
		}
		// Copies land anywhere among the stream's chunks, which keep their order.
		for _, c := range copies {
			i := r.IntN(len(evs) + 1)
			evs = append(evs[:i], append([]event{c}, evs[i:]...)...)
		}
		j := newStreamJoin()
		var got []byte
		for _, e := range evs {
			var err error
			if e.copy {
				err = j.fromCopy(uint64(e.off), stream[e.off:e.end])
			} else {
				err = j.fromStream(stream[e.off:e.end])
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			got = append(got, readReady(t, j)...)
		}
		if !bytes.Equal(got, stream) {
			t.Fatalf("round %d: read %d bytes, want the stream's %d", round, len(got), len(stream))
		}
	}
}
