package transport

import (
	"io"
	"slices"

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
	b, err := c.nextRaw(c.buf[:0])
	if err != nil {
		return nil, err
	}
	c.buf = b
	m, _, err := codec.ParseControl(b, &c.lim)
	return m, err
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
