package codec

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/islandsync/islandsync/island"
)

// TypeSpawn is the type byte of a Spawn.
const TypeSpawn MessageType = 0x08

// Spawn gives, on the reliable stream, an island's state at the authority
// time it comes into existence: every member's initial pose and velocity,
// in manifest order. It follows the island's Lease and Manifest, whose
// epoch, topology and config it is of, so that an observer shows the island
// from Time on even when the island's first frame is lost.
//
// The states are exact (binary64) and coded against the member before:
// each field as the low-order bytes of its bits XOR the same field's bits
// in the member before, up to the highest byte that is not zero. So the
// bodies of a chain or a stack at rest — the same height, angle and
// velocity, positions a link apart — cost about ten bytes each rather than
// forty-eight.
type Spawn struct {
	Island  uint32
	Time    island.Time     // authority µs the island comes into existence
	Segment uint32          // its continuity segment
	Members []island.Member // manifest order; every state finite
}

func (Spawn) Type() MessageType { return TypeSpawn }

func (m Spawn) Size() int { return ControlHeaderSize + statedSize(m.Members) }

// spawnHead is island (4), time (8), segment (4) and member count (4).
const spawnHead = 20

// stateFields is the fields of a member's state: x, y, angle, vx, vy,
// angular velocity; stateHead the bytes of their lengths (a nibble each).
const (
	stateFields = 6
	stateHead   = stateFields / 2
)

// stateBits is s's fields as IEEE-754 binary64 bits, in wire order.
func stateBits(s *island.State) [stateFields]uint64 {
	return [stateFields]uint64{math.Float64bits(s.X), math.Float64bits(s.Y), math.Float64bits(s.Angle),
		math.Float64bits(s.VX), math.Float64bits(s.VY), math.Float64bits(s.AngVel)}
}

// xorBytes is how many low-order bytes of x are written: up to its highest
// byte that is not zero (0 for 0).
func xorBytes(x uint64) int { return (bits.Len64(x) + 7) / 8 }

// memberIDs is the members' identities, in order.
func memberIDs(ms []island.Member) []island.MemberID {
	ids := make([]island.MemberID, len(ms))
	for i := range ms {
		ids[i] = ms[i].ID
	}
	return ids
}

func (m Spawn) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	return appendStated(b, m.Island, m.Time, m.Segment, m.Members)
}

// statedSize is the body size of a Spawn or a Final of these members.
func statedSize(ms []island.Member) int {
	n := spawnHead + idRunsSize(memberIDs(ms))
	var prev [stateFields]uint64
	for i := range ms {
		cur := stateBits(&ms[i].State)
		n += stateHead
		for f := range cur {
			n += xorBytes(cur[f] ^ prev[f])
		}
		prev = cur
	}
	return n
}

// appendStated appends the body a Spawn and a Final share: island, time,
// segment, the members' identities, then their states, each coded against
// the member before.
func appendStated(b []byte, isl uint32, t island.Time, segment uint32, ms []island.Member) []byte {
	b = binary.LittleEndian.AppendUint32(b, isl)
	b = binary.LittleEndian.AppendUint64(b, uint64(t))
	b = binary.LittleEndian.AppendUint32(b, segment)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ms)))
	b = appendIDs(b, memberIDs(ms))
	var prev [stateFields]uint64
	for i := range ms {
		cur := stateBits(&ms[i].State)
		var x [stateFields]uint64
		for f := range cur {
			x[f] = cur[f] ^ prev[f]
		}
		for f := 0; f < stateFields; f += 2 {
			b = append(b, byte(xorBytes(x[f])|xorBytes(x[f+1])<<4))
		}
		for f := range x {
			for k := range xorBytes(x[f]) {
				b = append(b, byte(x[f]>>(8*k)))
			}
		}
		prev = cur
	}
	return b
}

func (p *ctlParser) spawn(max int) (Spawn, error) {
	isl, t, seg, ms, err := p.stated(max)
	if err != nil {
		return Spawn{}, err
	}
	return Spawn{Island: isl, Time: t, Segment: seg, Members: ms}, nil
}

// stated parses the body a Spawn and a Final share (appendStated).
func (p *ctlParser) stated(max int) (isl uint32, t island.Time, segment uint32, ms []island.Member, err error) {
	if err := p.need(16, "island, time and segment"); err != nil {
		return 0, 0, 0, nil, err
	}
	isl, t, segment = p.u32(), island.Time(p.u64()), p.u32()
	n, err := p.idCount(max, "member count")
	if err != nil {
		return 0, 0, 0, nil, err
	}
	ids, err := p.ids(n, "members")
	if err != nil {
		return 0, 0, 0, nil, err
	}
	ms = make([]island.Member, n)
	var prev [stateFields]uint64
	for i := range ms {
		if err := p.need(stateHead, "member state"); err != nil {
			return 0, 0, 0, nil, err
		}
		at := p.off
		var lens [stateFields]int
		for f := 0; f < stateFields; f += 2 {
			h := p.u8()
			lens[f], lens[f+1] = int(h&15), int(h>>4)
		}
		var cur [stateFields]uint64
		for f, k := range lens {
			if k > 8 {
				return 0, 0, 0, nil, fail(ErrMalformed, at, "member state length")
			}
			if err := p.need(k, "member state"); err != nil {
				return 0, 0, 0, nil, err
			}
			var x uint64
			for j := range k {
				x |= uint64(p.b[j]) << (8 * j)
			}
			if k > 0 && p.b[k-1] == 0 {
				return 0, 0, 0, nil, fail(ErrMalformed, p.off+k-1, "member state length")
			}
			p.b, p.off = p.b[k:], p.off+k
			cur[f] = prev[f] ^ x
			if v := math.Float64frombits(cur[f]); math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, 0, nil, fail(ErrNonFinite, at, "member state")
			}
		}
		s := &ms[i].State
		ms[i].ID = ids[i]
		s.X, s.Y, s.Angle = math.Float64frombits(cur[0]), math.Float64frombits(cur[1]), math.Float64frombits(cur[2])
		s.VX, s.VY, s.AngVel = math.Float64frombits(cur[3]), math.Float64frombits(cur[4]), math.Float64frombits(cur[5])
		prev = cur
	}
	return isl, t, segment, ms, nil
}
