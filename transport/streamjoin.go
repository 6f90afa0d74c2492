package transport

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// streamJoin is the server's control stream as an observer reads it, put
// together from the stream itself and from the stream copies that come as
// datagrams (codec.StreamCopy): each byte is read once, from whichever
// source brought it first, in stream order. Bytes a copy brought ahead of
// the stream are kept until the stream brings them too and must be equal
// (ErrCopyDiffers otherwise): a copy moves bytes earlier, never changes
// them. What it holds is bounded: bytes brought but not read, bytes read
// from copies but not yet from the stream, and copies that start past what
// has been read so far.
type streamJoin struct {
	mu   sync.Mutex
	cond *sync.Cond
	// ready is what was brought and not yet read.
	ready []byte
	// pos is the stream position of the end of what was brought; streamed
	// how many bytes came from the stream itself (≤ pos).
	pos, streamed uint64
	// unverified holds the bytes [streamed, pos) a copy brought, for the
	// stream to match.
	unverified []byte
	// ahead holds copies that start past pos, by arrival.
	ahead []aheadCopy
	err   error // the stream's end or ErrCopyDiffers; read once ready is empty
	stats joinStats
}

type aheadCopy struct {
	off uint64
	b   []byte
}

// joinStats counts what copies did.
type joinStats struct {
	Used    uint64 // copies that brought bytes before the stream did
	Late    uint64 // copies whose bytes had all come already
	Dropped uint64 // copies let go for a cap: too far ahead, too much held
}

// Caps of a streamJoin: how many bytes may wait to be read before the
// stream's reader waits (and copies are let go), how far ahead of the
// stream copies may bring bytes, and how many copies may wait for a gap
// before them to fill.
const (
	joinReadyCap  = 1 << 20
	joinAheadCap  = 64 << 10
	joinAheadKept = 16
)

// ErrCopyDiffers: the stream brought bytes that differ from a copy's of
// the same position — a server that breaks the rule that copies are its
// stream's bytes. The connection is closed.
var ErrCopyDiffers = errors.New("transport: stream copy differs from the stream")

func newStreamJoin() *streamJoin {
	j := &streamJoin{}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// Read reads brought bytes, waiting for some; after the stream's end it
// returns that error.
func (j *streamJoin) Read(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for len(j.ready) == 0 && j.err == nil {
		j.cond.Wait()
	}
	if len(j.ready) == 0 {
		return 0, j.err
	}
	n := copy(p, j.ready)
	j.ready = j.ready[n:]
	if len(j.ready) == 0 {
		j.ready = j.ready[:0:0]
	}
	j.cond.Broadcast()
	return n, nil
}

// fromStream takes the stream's next bytes, waiting while too much is
// brought and not read. It returns ErrCopyDiffers when they differ from a
// copy's.
func (j *streamJoin) fromStream(b []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for len(j.ready) >= joinReadyCap && j.err == nil {
		j.cond.Wait()
	}
	if j.err != nil {
		return j.err
	}
	// The part a copy brought already must match it.
	if k := min(uint64(len(b)), j.pos-j.streamed); k > 0 {
		if !bytes.Equal(b[:k], j.unverified[:k]) {
			j.fail(ErrCopyDiffers)
			return ErrCopyDiffers
		}
		j.unverified = j.unverified[k:]
		if len(j.unverified) == 0 {
			j.unverified = j.unverified[:0:0]
		}
		j.streamed += k
		b = b[k:]
	}
	j.streamed += uint64(len(b))
	j.bring(b)
	return j.takeAhead()
}

// fromCopy takes a copy of the stream's bytes at off. It returns
// ErrCopyDiffers when they differ from what a copy already brought.
func (j *streamJoin) fromCopy(off uint64, b []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return nil
	}
	if off > j.pos {
		if len(j.ahead) >= joinAheadKept || off-j.streamed+uint64(len(b)) > joinAheadCap {
			j.stats.Dropped++
			return nil
		}
		j.ahead = append(j.ahead, aheadCopy{off, bytes.Clone(b)})
		return nil
	}
	if err := j.copyAt(off, b); err != nil {
		return err
	}
	return j.takeAhead()
}

// copyAt takes a copy that starts at or before pos; j.mu is held. The
// caller then takes the held copies it may have reached (takeAhead).
func (j *streamJoin) copyAt(off uint64, b []byte) error {
	end := off + uint64(len(b))
	if end <= j.pos {
		j.stats.Late++
	}
	// Bytes the stream brought already are not looked at; the ones a copy
	// brought must match.
	if off < j.streamed {
		if end <= j.streamed {
			return nil
		}
		b, off = b[j.streamed-off:], j.streamed
	}
	if k := min(uint64(len(b)), j.pos-off); k > 0 {
		if !bytes.Equal(b[:k], j.unverified[off-j.streamed:off-j.streamed+k]) {
			j.fail(ErrCopyDiffers)
			return ErrCopyDiffers
		}
		b = b[k:]
	}
	if len(b) == 0 {
		return nil
	}
	if j.pos+uint64(len(b))-j.streamed > joinAheadCap || len(j.ready)+len(b) > joinReadyCap {
		j.stats.Dropped++
		return nil
	}
	j.stats.Used++
	j.unverified = append(j.unverified, b...)
	j.bring(b)
	return nil
}

// bring appends b to what may be read; j.mu is held.
func (j *streamJoin) bring(b []byte) {
	if len(b) == 0 {
		return
	}
	j.ready = append(j.ready, b...)
	j.pos += uint64(len(b))
	j.cond.Broadcast()
}

// takeAhead takes the held copies that no longer start past pos; j.mu is
// held.
func (j *streamJoin) takeAhead() error {
	for again := true; again; {
		again = false
		for i, c := range j.ahead {
			if c.off <= j.pos {
				j.ahead = append(j.ahead[:i], j.ahead[i+1:]...)
				if err := j.copyAt(c.off, c.b); err != nil {
					return err
				}
				again = true
				break
			}
		}
	}
	return nil
}

// end records the stream's end (io.EOF or its error): Read returns it once
// every brought byte is read.
func (j *streamJoin) end(err error) {
	if err == nil {
		err = io.EOF
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = err
	}
	j.cond.Broadcast()
}

// fail ends the join at once with err; j.mu is held.
func (j *streamJoin) fail(err error) {
	j.err = err
	j.ready = nil
	j.cond.Broadcast()
}

// counts returns what copies did so far.
func (j *streamJoin) counts() joinStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
}
