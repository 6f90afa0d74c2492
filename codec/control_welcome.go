package codec

import (
	"encoding/binary"
)

// Welcome is the first message the authority sends on a connection.
type Welcome struct {
	Version uint8 // control protocol version; ControlVersion
	// Timeline names the authority's simulation clock. It changes when the
	// authority restarts; authority times of different timelines are unrelated.
	Timeline uint64
	// SendPeriod is the broadcast period in microseconds; at least 1.
	SendPeriod uint32
	// MaxDatagram is the datagram cap the authority encodes this observer's
	// frames for, in bytes; MinMaxDatagram … MaxMaxDatagram.
	MaxDatagram uint16
}

func (Welcome) Type() MessageType { return TypeWelcome }

func (Welcome) Size() int { return ControlHeaderSize + welcomeBody }

func (m Welcome) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = append(b, m.Version)
	b = binary.LittleEndian.AppendUint64(b, m.Timeline)
	b = binary.LittleEndian.AppendUint32(b, m.SendPeriod)
	return binary.LittleEndian.AppendUint16(b, m.MaxDatagram)
}

func (p *ctlParser) welcome() (Welcome, error) {
	var w Welcome
	if err := p.need(welcomeBody, "welcome"); err != nil {
		return w, err
	}
	at := p.off
	w.Version, w.Timeline, w.SendPeriod, w.MaxDatagram = p.u8(), p.u64(), p.u32(), p.u16()
	switch {
	case w.Version != ControlVersion:
		return Welcome{}, fail(ErrVersion, at, "welcome version")
	case w.SendPeriod == 0:
		return Welcome{}, fail(ErrMalformed, at+9, "welcome send period")
	case w.MaxDatagram < MinMaxDatagram:
		return Welcome{}, fail(ErrMalformed, at+13, "welcome max datagram")
	}
	return w, nil
}
