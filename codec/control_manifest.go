package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// Manifest is an island's current member list under one topology generation
// and config revision. Members are in manifest order.
type Manifest island.Manifest

func (Manifest) Type() MessageType { return TypeManifest }

func (m Manifest) Size() int { return ControlHeaderSize + manifestHead + idRunsSize(m.Members) }

func (m Manifest) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint32(b, m.Topology)
	b = binary.LittleEndian.AppendUint32(b, m.Config)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Members)))
	return appendIDs(b, m.Members)
}

func (p *ctlParser) manifest(max int) (Manifest, error) {
	if err := p.need(12, "manifest"); err != nil {
		return Manifest{}, err
	}
	m := Manifest{Island: p.u32(), Topology: p.u32(), Config: p.u32()}
	n, err := p.idCount(max, "member count")
	if err != nil {
		return Manifest{}, err
	}
	if m.Members, err = p.ids(n, "members"); err != nil {
		return Manifest{}, err
	}
	return m, nil
}
