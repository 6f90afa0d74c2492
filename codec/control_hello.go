package codec

import (
	"encoding/binary"
	"slices"
)

// Hello is the first message of an observer that presents a connect token
// (package token): a server that requires tokens reads it before anything
// else, and gives the observer a slot only when the token verifies. Token
// holds the token's bytes, 1 … MaxHelloToken of them; the codec does not
// look inside.
type Hello struct{ Token []byte }

// MaxHelloToken caps a Hello's token: it is read before the observer holds
// anything, so what it can make the server buffer is small.
const MaxHelloToken = 8 << 10

func (Hello) Type() MessageType { return TypeHello }

func (m Hello) Size() int { return ControlHeaderSize + 2 + len(m.Token) }

// Append writes the Hello; a token longer than MaxHelloToken is the
// caller's mistake and is written anyway (the parser refuses it).
func (m Hello) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Token)))
	return append(b, m.Token...)
}

func (p *ctlParser) hello() (Hello, error) {
	if err := p.need(2, "hello token length"); err != nil {
		return Hello{}, err
	}
	at := p.off
	n := int(p.u16())
	if n == 0 || n > MaxHelloToken {
		return Hello{}, fail(ErrMalformed, at, "hello token length")
	}
	if err := p.need(n, "hello token"); err != nil {
		return Hello{}, err
	}
	h := Hello{Token: slices.Clone(p.b[:n])}
	p.b, p.off = p.b[n:], p.off+n
	return h, nil
}
