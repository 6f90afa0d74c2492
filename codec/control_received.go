package codec

import (
	"encoding/binary"
)

// Received confirms datagrams (wire 3): datagram Newest, and datagram
// Newest−1−i for every set bit i of Prior, arrived and were processed —
// every frame they carried is held as a baseline, unless its island is in
// a Keyframes sent before. Its size is the same whatever the world's.
type Received struct {
	Newest uint32 // datagram number (serial arithmetic)
	Prior  uint64
}

func (Received) Type() MessageType { return TypeReceived }

func (Received) Size() int { return ControlHeaderSize + receivedBody }

func (m Received) Append(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(appendU32s(appendEnvelope(b, m.Type(), m.Size()), m.Newest), m.Prior)
}

func (p *ctlParser) received() (Received, error) {
	if err := p.need(receivedBody, "received"); err != nil {
		return Received{}, err
	}
	return Received{Newest: p.u32(), Prior: p.u64()}, nil
}
