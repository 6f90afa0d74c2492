package transport

import (
	"io"

	"github.com/islandsync/islandsync/codec"
)

// controlReader reads whole control messages from a stream. It holds at
// most one message (capped by the limits) at a time: the length field is
// checked before any byte of the body is buffered.
type controlReader struct {
	r   io.Reader
	lim codec.ControlLimits
	buf []byte
}

func newControlReader(r io.Reader, lim codec.ControlLimits) *controlReader {
	return &controlReader{r: r, lim: lim.WithDefaults()}
}

// next returns the next message; a parse error (a typed codec error) means
// the peer broke the protocol.
func (c *controlReader) next() (codec.Message, error) {
	if cap(c.buf) < codec.ControlHeaderSize {
		c.buf = make([]byte, 0, 256)
	}
	c.buf = c.buf[:codec.ControlHeaderSize]
	if _, err := io.ReadFull(c.r, c.buf[:codec.ControlHeaderSize]); err != nil {
		return nil, err
	}
	n, err := codec.ControlLength(c.buf, &c.lim)
	if err != nil {
		return nil, err
	}
	if cap(c.buf) < n {
		c.buf = append(c.buf[:cap(c.buf)], make([]byte, n-cap(c.buf))...)
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.r, c.buf[codec.ControlHeaderSize:]); err != nil {
		return nil, err
	}
	m, _, err := codec.ParseControl(c.buf, &c.lim)
	return m, err
}
