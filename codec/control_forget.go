package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// Forget says an island id no longer exists (it merged, split or emptied,
// or it left the observer's subscription) as of authority time Time: an
// observer shows it until playback reaches Time, then drops it. Time 0
// takes effect at once.
type Forget struct {
	Island uint32
	Time   island.Time // authority µs the island ends
}

func (Forget) Type() MessageType { return TypeForget }

func (Forget) Size() int { return ControlHeaderSize + forgetBody }

func (m Forget) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(appendEnvelope(b, m.Type(), m.Size()), m.Island)
	return binary.LittleEndian.AppendUint64(b, uint64(m.Time))
}

func (p *ctlParser) forget() (Forget, error) {
	if err := p.need(forgetBody, "forget"); err != nil {
		return Forget{}, err
	}
	return Forget{Island: p.u32(), Time: island.Time(p.u64())}, nil
}
