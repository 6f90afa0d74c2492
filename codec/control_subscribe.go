package codec

import (
	"encoding/binary"
)

// Subscribe tells the authority which islands an observer wants. All means
// every island; otherwise Islands lists them in strictly ascending order (an
// empty list subscribes to nothing).
type Subscribe struct {
	All     bool
	Islands []uint32
}

func (Subscribe) Type() MessageType { return TypeSubscribe }

func (m Subscribe) Size() int { return ControlHeaderSize + subscribeHead + 4*len(m.Islands) }

func (m Subscribe) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	mode := byte(1)
	if m.All {
		mode = 0
	}
	b = append(b, mode)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Islands)))
	for _, id := range m.Islands {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	return b
}

func (p *ctlParser) subscribe(max int) (Subscribe, error) {
	if err := p.need(1, "subscribe mode"); err != nil {
		return Subscribe{}, err
	}
	at := p.off
	mode := p.u8()
	if mode > 1 {
		return Subscribe{}, fail(ErrMalformed, at, "subscribe mode")
	}
	at = p.off
	n, err := p.count(4, max, "island count")
	if err != nil {
		return Subscribe{}, err
	}
	s := Subscribe{All: mode == 0}
	if s.All {
		if n != 0 {
			return Subscribe{}, fail(ErrMalformed, at, "island count")
		}
		return s, nil
	}
	s.Islands = make([]uint32, n)
	for i := range s.Islands {
		at = p.off
		s.Islands[i] = p.u32()
		if i > 0 && s.Islands[i] <= s.Islands[i-1] {
			return Subscribe{}, fail(ErrMalformed, at, "island order")
		}
	}
	return s, nil
}
