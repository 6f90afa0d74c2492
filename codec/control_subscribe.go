package codec

import (
	"encoding/binary"
	"math"
)

// MaxRegions caps the regions one Subscribe names.
const MaxRegions = 16

// Subscribe tells the authority which islands an observer wants, in one of
// three modes:
//   - All: every island;
//   - Regions (non-nil): every island whose bounds meet one of these
//     axis-aligned boxes (world metres), as the islands move — the
//     observer's areas of interest, sent again whenever its camera moves;
//   - otherwise Islands, in strictly ascending order (an empty list
//     subscribes to nothing).
type Subscribe struct {
	All     bool
	Islands []uint32
	Regions []Region
}

// Region is an axis-aligned box in world metres: X0 ≤ X1, Y0 ≤ Y1, all
// finite.
type Region struct {
	X0, Y0, X1, Y1 float64
}

// Meets reports whether r and the box x0…x1, y0…y1 overlap (touching counts).
func (r Region) Meets(x0, y0, x1, y1 float64) bool {
	return x0 <= r.X1 && r.X0 <= x1 && y0 <= r.Y1 && r.Y0 <= y1
}

// Grow returns r widened by m metres on every side.
func (r Region) Grow(m float64) Region { return Region{r.X0 - m, r.Y0 - m, r.X1 + m, r.Y1 + m} }

// Centre returns the middle of r.
func (r Region) Centre() (x, y float64) { return (r.X0 + r.X1) / 2, (r.Y0 + r.Y1) / 2 }

// valid reports whether r is a box: finite corners in order.
func (r Region) valid() bool {
	return finite(r.X0, r.Y0, r.X1, r.Y1) && r.X0 <= r.X1 && r.Y0 <= r.Y1
}

// subscribe modes on the wire
const (
	subAll     = 0
	subList    = 1
	subRegions = 2
	regionSize = 32
)

func (Subscribe) Type() MessageType { return TypeSubscribe }

func (m Subscribe) Size() int {
	if m.Regions != nil && !m.All {
		return ControlHeaderSize + subscribeHead + regionSize*len(m.Regions)
	}
	return ControlHeaderSize + subscribeHead + 4*len(m.Islands)
}

func (m Subscribe) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	switch {
	case m.All:
		b = append(b, subAll)
		return binary.LittleEndian.AppendUint32(b, 0)
	case m.Regions != nil:
		b = append(b, subRegions)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Regions)))
		for _, r := range m.Regions {
			for _, v := range [...]float64{r.X0, r.Y0, r.X1, r.Y1} {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
		return b
	}
	b = append(b, subList)
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
	if mode > subRegions {
		return Subscribe{}, fail(ErrMalformed, at, "subscribe mode")
	}
	at = p.off
	if mode == subRegions {
		n, err := p.count(regionSize, MaxRegions, "region count")
		if err != nil {
			return Subscribe{}, err
		}
		s := Subscribe{Regions: make([]Region, n)}
		for i := range s.Regions {
			at = p.off
			r := Region{p.f64(), p.f64(), p.f64(), p.f64()}
			if !r.valid() {
				return Subscribe{}, fail(ErrMalformed, at, "region")
			}
			s.Regions[i] = r
		}
		return s, nil
	}
	n, err := p.count(4, max, "island count")
	if err != nil {
		return Subscribe{}, err
	}
	s := Subscribe{All: mode == subAll}
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
