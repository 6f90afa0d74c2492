package transport

import (
	"errors"
	"io"
	"slices"

	"github.com/islandsync/islandsync/codec"
)

// controlReader reads whole control messages from a stream. It holds at
// most readBuffers messages (each capped by the limits) at a time: the
// length field is checked before any byte of the body is buffered.
type controlReader struct {
	r    io.Reader
	lim  codec.ControlLimits
	free chan []byte // take's buffers not in use; whoever applies one puts it back
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
	if _, err := io.ReadFull(c.r, buf); err != nil {
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
