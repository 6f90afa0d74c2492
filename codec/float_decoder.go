package codec

// AppendDatagramHeader appends the 6-byte datagram header (magic, version,
// record count) to b.
func AppendDatagramHeader(b []byte, records uint8) []byte {
	b = append(b, Magic...)
	return append(b, Version, records)
}

// ParseDatagramHeader checks the datagram header at the start of b and
// returns the record count and DatagramHeaderSize.
func ParseDatagramHeader(b []byte) (int, int, error) {
	if len(b) < DatagramHeaderSize {
		return 0, 0, fail(ErrTruncated, len(b), "datagram header")
	}
	if string(b[:4]) != Magic {
		return 0, 0, fail(ErrBadMagic, 0, "magic")
	}
	if b[4] != Version {
		return 0, 0, fail(ErrVersion, 4, "version")
	}
	if b[5] == 0 {
		return 0, 0, fail(ErrMalformed, 5, "record count")
	}
	return int(b[5]), DatagramHeaderSize, nil
}

// FloatDecoder decodes datagrams into storage it owns and reuses, so steady-state
// decoding does not allocate. A FloatDecoder is not safe for concurrent use; use one
// per receive loop.
type FloatDecoder struct {
	cfg   Config
	frags []Fragment
}

// NewFloatDecoder returns a decoder enforcing cfg (zero fields mean defaults).
func NewFloatDecoder(cfg Config) (*FloatDecoder, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &FloatDecoder{cfg: c}, nil
}

// Config returns the decoder's limits with defaults applied.
func (d *FloatDecoder) Config() Config { return d.cfg }

// Decode parses and checks one whole datagram. On success it returns its
// fragments in wire order. The returned slice is the decoder's and stays valid
// until the next call to Decode; each fragment's Raw aliases b. On error it
// returns nil and an error wrapping one of the package sentinels; no fragment
// of a bad datagram is returned.
//
// Decode is total: any input yields fragments or an error, never a panic, and
// nothing is sized from a length the input claims before that length is
// checked against the bytes actually present.
func (d *FloatDecoder) Decode(b []byte) ([]Fragment, error) {
	if len(b) > d.cfg.MaxDatagram {
		return nil, fail(ErrLimit, d.cfg.MaxDatagram, "datagram size")
	}
	n, off, err := ParseDatagramHeader(b)
	if err != nil {
		return nil, err
	}
	d.frags = d.frags[:0]
	for i := 0; i < n; i++ {
		f, used, err := ParseFragment(b[off:], &d.cfg)
		if err != nil {
			d.frags = d.frags[:0]
			return nil, shift(err, off)
		}
		d.frags = append(d.frags, f)
		off += used
	}
	if off != len(b) {
		d.frags = d.frags[:0]
		return nil, fail(ErrMalformed, off, "trailing bytes")
	}
	return d.frags, nil
}
