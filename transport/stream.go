package transport

import (
	"errors"
	"io"
	"slices"
	"time"

	"github.com/islandsync/islandsync/codec"
)

// controlReader reads whole control messages from a stream. It holds at
// most readBuffers messages (each capped by the limits) at a time: the
// length field is checked before any byte of the body is buffered.
type controlReader struct {
	r    io.Reader
	lim  codec.ControlLimits
	free chan []byte // take's buffers not in use; whoever applies one puts it back
	// With deadline set, a message must arrive whole within timeout of its
	// first byte (the wait for that byte is not bounded), or, while until
	// is set, by until: the peer cannot hold a buffer, or the connection,
	// with a message it never finishes.
	deadline func(time.Time) error
	timeout  time.Duration
	until    time.Time
}

// bound makes every message arrive whole within timeout of its first byte;
// d sets the stream's read deadline.
func (c *controlReader) bound(d func(time.Time) error, timeout time.Duration) {
	c.deadline, c.timeout = d, timeout
}

// by makes every message until the next by (or a zero t) arrive by t,
// first byte included: the bound of an observer's admission.
func (c *controlReader) by(t time.Time) {
	c.until = t
	if c.deadline != nil {
		_ = c.deadline(t)
	}
}

func newControlReader(r io.Reader, lim codec.ControlLimits) *controlReader {
	c := &controlReader{r: r, lim: lim.WithDefaults(), free: make(chan []byte, readBuffers)}
	for range readBuffers {
		c.free <- nil
	}
	return c
}

// readBuffers is how many control messages of one connection may be read
// ahead of the goroutine that applies them; each buffer holds one message
// (at most the cap), and buffers go round, so reading allocates nothing
// once they have grown.
const readBuffers = 4

// errStopped: take gave up waiting for a buffer.
var errStopped = errors.New("transport: stopped")

// take reads the next whole message, unparsed, into one of the reader's
// buffers, waiting until one is put back on c.free; it returns errStopped
// when done closes first.
func (c *controlReader) take(done <-chan struct{}) ([]byte, error) {
	select {
	case buf := <-c.free:
		return c.nextRaw(buf)
	case <-done:
		return nil, errStopped
	}
}

// nextRaw reads the next whole message, envelope included, into buf's
// storage (grown when too small) without parsing its body. Its length is
// checked against the cap before any byte of the body is read.
func (c *controlReader) nextRaw(buf []byte) ([]byte, error) {
	buf = slices.Grow(buf[:0], max(codec.ControlHeaderSize, 256))[:codec.ControlHeaderSize]
	if c.deadline != nil && c.until.IsZero() {
		if _, err := io.ReadFull(c.r, buf[:1]); err != nil {
			return nil, err
		}
		_ = c.deadline(time.Now().Add(c.timeout))
		defer c.deadline(time.Time{})
		if _, err := io.ReadFull(c.r, buf[1:]); err != nil {
			return nil, err
		}
	} else if _, err := io.ReadFull(c.r, buf); err != nil {
		return nil, err
	}
	n, err := codec.ControlLength(buf, &c.lim)
	if err != nil {
		return nil, err
	}
	buf = slices.Grow(buf, n-len(buf))[:n]
	if _, err := io.ReadFull(c.r, buf[codec.ControlHeaderSize:]); err != nil {
		return nil, err
	}
	return buf, nil
}
