package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// Lease is an island's current authority: owner and epoch.
type Lease island.Lease

func (Lease) Type() MessageType { return TypeLease }

func (Lease) Size() int { return ControlHeaderSize + leaseBody }

func (m Lease) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint32(b, m.Epoch)
	return binary.LittleEndian.AppendUint32(b, uint32(m.Owner))
}

func (p *ctlParser) lease() (Lease, error) {
	if err := p.need(leaseBody, "lease"); err != nil {
		return Lease{}, err
	}
	return Lease{Island: p.u32(), Epoch: p.u32(), Owner: island.SenderID(p.u32())}, nil
}
