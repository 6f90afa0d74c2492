package codec

import (
	"encoding/binary"
)

// Forget says an island id no longer exists (it merged or emptied).
type Forget struct{ Island uint32 }

func (Forget) Type() MessageType { return TypeForget }

func (Forget) Size() int { return ControlHeaderSize + forgetBody }

func (m Forget) Append(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(appendEnvelope(b, m.Type(), m.Size()), m.Island)
}

func (p *ctlParser) forget() (Forget, error) {
	if err := p.need(forgetBody, "forget"); err != nil {
		return Forget{}, err
	}
	return Forget{Island: p.u32()}, nil
}
