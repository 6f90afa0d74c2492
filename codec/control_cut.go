package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// Cut says an island's continuity segment Segment starts at authority time
// Time (a teleport, a respawn): receivers never extrapolate the older
// segment past Time, and show nothing rather than the old pose until a
// frame of the new segment is held.
type Cut struct {
	Island  uint32
	Segment uint32
	Time    island.Time
}

func (Cut) Type() MessageType { return TypeCut }

func (Cut) Size() int { return ControlHeaderSize + cutBody }

func (m Cut) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint32(b, m.Segment)
	return binary.LittleEndian.AppendUint64(b, uint64(m.Time))
}

func (p *ctlParser) cut() (Cut, error) {
	if err := p.need(cutBody, "cut"); err != nil {
		return Cut{}, err
	}
	return Cut{Island: p.u32(), Segment: p.u32(), Time: island.Time(p.u64())}, nil
}
