package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// TypeSpawn is the type byte of a Spawn.
const TypeSpawn MessageType = 0x08

// Spawn gives, on the reliable stream, an island's state at the authority
// time it comes into existence: every member's initial pose and velocity,
// in manifest order. It follows the island's Lease and Manifest, whose
// epoch, topology and config it is of, so that an observer shows the island
// from Time on even when the island's first frame is lost.
type Spawn struct {
	Island  uint32
	Time    island.Time     // authority µs the island comes into existence
	Segment uint32          // its continuity segment
	Members []island.Member // manifest order; every state finite
}

func (Spawn) Type() MessageType { return TypeSpawn }

func (m Spawn) Size() int { return ControlHeaderSize + spawnHead + MemberSize*len(m.Members) }

// spawnHead is island (4), time (8), segment (4) and member count (4).
const spawnHead = 20

func (m Spawn) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.Time))
	b = binary.LittleEndian.AppendUint32(b, m.Segment)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Members)))
	for i := range m.Members {
		b = AppendMember(b, &m.Members[i])
	}
	return b
}

func (p *ctlParser) spawn(max int) (Spawn, error) {
	if err := p.need(16, "spawn"); err != nil {
		return Spawn{}, err
	}
	m := Spawn{Island: p.u32(), Time: island.Time(p.u64()), Segment: p.u32()}
	at := p.off
	n, err := p.count(MemberSize, max, "member count")
	if err != nil {
		return Spawn{}, err
	}
	if n == 0 {
		return Spawn{}, fail(ErrMalformed, at, "member count")
	}
	raw := p.b[:n*MemberSize]
	if i := firstNonFinite(raw); i >= 0 {
		return Spawn{}, fail(ErrNonFinite, p.off+i, "spawn member state")
	}
	m.Members = make([]island.Member, n)
	for i := range m.Members {
		m.Members[i], _ = Records(raw).Member(i)
	}
	p.b, p.off = p.b[n*MemberSize:], p.off+n*MemberSize
	return m, nil
}
