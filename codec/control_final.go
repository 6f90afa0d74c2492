package codec

import "github.com/islandsync/islandsync/island"

// TypeFinal is the type byte of a Final.
const TypeFinal MessageType = 0x0B

// Final gives, on the reliable stream, an island's last state under its
// current lease, just before a Lease that hands the island to another
// holder: the frame the old holder sent last, which the observer may also
// receive as a datagram. A datagram can arrive after the new Lease, and an
// observer refuses an older epoch's frame once it holds a newer lease; the
// Final cannot, so the island's motion has no hole across the hand-off
// wider than the holders' sampling leaves. A front that relays a hand-off
// sends it; an authority never needs to.
//
// Its layout is a Spawn's (the states coded against the member before). It
// is committed as the frame it repeats would be: a frame of the island's
// lease and manifest as the observer holds them when it arrives, no flags
// (one already held from its datagram is a duplicate). A Final of an
// island that is not live, or whose members are not its manifest's, is
// refused and counted, never an error of the stream. An event: a late
// joiner is not sent it.
type Final struct {
	Island  uint32
	Time    island.Time     // authority µs of the state
	Segment uint32          // its continuity segment
	Members []island.Member // manifest order; every state finite
}

func (Final) Type() MessageType { return TypeFinal }

func (m Final) Size() int { return ControlHeaderSize + statedSize(m.Members) }

func (m Final) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	return appendStated(b, m.Island, m.Time, m.Segment, m.Members)
}

func (p *ctlParser) final(max int) (Final, error) {
	isl, t, seg, ms, err := p.stated(max)
	if err != nil {
		return Final{}, err
	}
	return Final{Island: isl, Time: t, Segment: seg, Members: ms}, nil
}
