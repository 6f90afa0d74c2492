package token

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Version is the token layout version this package writes and reads.
const Version = 1

// Limits of a token.
const (
	// MaxIslands caps the islands one token lists: a token is read before
	// the observer holds anything, so what it can make the server parse is
	// bounded.
	MaxIslands = 1024
	headSize   = 1 + 8 + 8 + 2
	// MaxSize is the largest valid token, in bytes.
	MaxSize = headSize + 4*MaxIslands + ed25519.SignatureSize
)

// context is signed before the token's bytes, so that a signature made for
// something else with the same key never passes as a token.
const context = "islandsync connect token\x00"

// Errors Verify returns; Reason names each for counters.
var (
	ErrMalformed = errors.New("token: malformed")          // not a token of this layout
	ErrVersion   = errors.New("token: unknown version")    // a layout this package does not read
	ErrSignature = errors.New("token: bad signature")      // signed by no key the server trusts, or altered
	ErrExpired   = errors.New("token: expired")            // past its expiry
	ErrEncoding  = errors.New("token: not base64url text") // Decode's input is not a token's text form
)

// Reason returns a short name of err for counters: "malformed", "version",
// "signature", "expired", or "" when err is none of Verify's.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrEncoding):
		return "malformed"
	case errors.Is(err, ErrVersion):
		return "version"
	case errors.Is(err, ErrSignature):
		return "signature"
	case errors.Is(err, ErrExpired):
		return "expired"
	}
	return ""
}

// Token is what a connect token grants.
type Token struct {
	// Observer identifies the observer; nonzero. A server lets one
	// connection hold it at a time.
	Observer uint64
	// Expires is the Unix time, in seconds, after which the token is
	// refused.
	Expires int64
	// Islands, when not empty, are the only islands the observer may see,
	// strictly ascending; empty means every island.
	Islands []uint32
}

// GenerateKey makes an Ed25519 key pair for signing tokens, from rand
// (crypto/rand.Reader when nil).
func GenerateKey(rand io.Reader) (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand)
}

func (t Token) check() error {
	switch {
	case t.Observer == 0:
		return fmt.Errorf("%w: observer 0", ErrMalformed)
	case len(t.Islands) > MaxIslands:
		return fmt.Errorf("%w: %d islands, at most %d", ErrMalformed, len(t.Islands), MaxIslands)
	}
	for i := 1; i < len(t.Islands); i++ {
		if t.Islands[i] <= t.Islands[i-1] {
			return fmt.Errorf("%w: islands not strictly ascending", ErrMalformed)
		}
	}
	return nil
}

// Size returns the token's encoded size in bytes.
func (t Token) Size() int { return headSize + 4*len(t.Islands) + ed25519.SignatureSize }

// Sign returns the signed token's bytes. It fails on a token Verify would
// refuse as malformed.
func (t Token) Sign(key ed25519.PrivateKey) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("token: not an Ed25519 private key")
	}
	b := make([]byte, 0, t.Size())
	b = append(b, Version)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Expires))
	b = binary.LittleEndian.AppendUint64(b, t.Observer)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(t.Islands)))
	for _, id := range t.Islands {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	return append(b, ed25519.Sign(key, signed(b))...), nil
}

func signed(body []byte) []byte { return append([]byte(context), body...) }

// Parse reads a token's fields without checking its signature or expiry:
// for tools that show what a token says. Servers call Verify.
func Parse(b []byte) (Token, error) {
	if len(b) < headSize+ed25519.SignatureSize || len(b) > MaxSize {
		return Token{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != Version {
		return Token{}, fmt.Errorf("%w %d", ErrVersion, b[0])
	}
	n := int(binary.LittleEndian.Uint16(b[17:19]))
	if n > MaxIslands || len(b) != headSize+4*n+ed25519.SignatureSize {
		return Token{}, fmt.Errorf("%w: %d islands in %d bytes", ErrMalformed, n, len(b))
	}
	t := Token{Expires: int64(binary.LittleEndian.Uint64(b[1:9])), Observer: binary.LittleEndian.Uint64(b[9:17])}
	if n > 0 {
		t.Islands = make([]uint32, n)
		for i := range t.Islands {
			t.Islands[i] = binary.LittleEndian.Uint32(b[headSize+4*i:])
		}
	}
	if err := t.check(); err != nil {
		return Token{}, err
	}
	return t, nil
}

// Verify checks a token's bytes at now (Unix seconds): its layout, a
// signature by one of keys, and its expiry (a token is good while now ≤
// Expires). It returns what the token grants, or an error wrapping
// ErrMalformed, ErrVersion, ErrSignature or ErrExpired.
func Verify(b []byte, keys []ed25519.PublicKey, now int64) (Token, error) {
	t, err := Parse(b)
	if err != nil {
		return Token{}, err
	}
	body, sig := b[:len(b)-ed25519.SignatureSize], b[len(b)-ed25519.SignatureSize:]
	msg := signed(body)
	if !slices.ContainsFunc(keys, func(k ed25519.PublicKey) bool {
		return len(k) == ed25519.PublicKeySize && ed25519.Verify(k, msg, sig)
	}) {
		return Token{}, ErrSignature
	}
	if now > t.Expires {
		return Token{}, fmt.Errorf("%w at %d (now %d)", ErrExpired, t.Expires, now)
	}
	return t, nil
}

// Encode returns a token's text form: unpadded base64url.
func Encode(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Decode reads a token's text form.
func Decode(s string) ([]byte, error) {
	if len(s) > base64.RawURLEncoding.EncodedLen(MaxSize) {
		return nil, fmt.Errorf("%w: %d characters", ErrEncoding, len(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEncoding, err)
	}
	return b, nil
}
