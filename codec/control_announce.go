package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// Announce says that identities come into existence at authority time Time.
type Announce struct {
	Time island.Time // authority µs the identities take effect
	IDs  []island.MemberID
}

// Destroy says that identities (these generations) are retired at authority
// time Time; receivers tombstone them so late records never revive them.
type Destroy struct {
	Time island.Time
	IDs  []island.MemberID
}

func (Announce) Type() MessageType { return TypeAnnounce }

func (Destroy) Type() MessageType { return TypeDestroy }

func (m Announce) Size() int { return ControlHeaderSize + idListHead + idRunsSize(m.IDs) }

func (m Destroy) Size() int { return ControlHeaderSize + idListHead + idRunsSize(m.IDs) }

func appendIDList(b []byte, typ MessageType, t island.Time, ids []island.MemberID) []byte {
	b = appendEnvelope(b, typ, ControlHeaderSize+idListHead+idRunsSize(ids))
	b = binary.LittleEndian.AppendUint64(b, uint64(t))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ids)))
	return appendIDs(b, ids)
}

func (m Announce) Append(b []byte) []byte { return appendIDList(b, TypeAnnounce, m.Time, m.IDs) }

func (m Destroy) Append(b []byte) []byte { return appendIDList(b, TypeDestroy, m.Time, m.IDs) }

func (p *ctlParser) idList(max int) (island.Time, []island.MemberID, error) {
	if err := p.need(8, "time"); err != nil {
		return 0, nil, err
	}
	t := island.Time(p.u64())
	n, err := p.idCount(max, "identity count")
	if err != nil {
		return 0, nil, err
	}
	ids, err := p.ids(n, "identities")
	return t, ids, err
}
