package token

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
)

// MaxKeys caps the public keys one key file may list (several let a
// backend rotate its key: sign with the new one while the old one's tokens
// run out).
const MaxKeys = 16

// EncodePublicKey returns a public key's text form, one line of a key
// file: unpadded base64url of its 32 bytes.
func EncodePublicKey(k ed25519.PublicKey) string { return base64.RawURLEncoding.EncodeToString(k) }

// EncodePrivateKey returns a private key's text form: unpadded base64url
// of its 32-byte seed. Keep it where only the backend can read it.
func EncodePrivateKey(k ed25519.PrivateKey) string {
	return base64.RawURLEncoding.EncodeToString(k.Seed())
}

// ParsePrivateKey reads EncodePrivateKey's form (surrounding white space
// allowed).
func ParsePrivateKey(text []byte) (ed25519.PrivateKey, error) {
	seed, err := base64.RawURLEncoding.DecodeString(string(bytes.TrimSpace(text)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("token: a private key is %d bytes of base64url text", ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ParsePublicKeys reads a key file: one public key per line in
// EncodePublicKey's form; blank lines and lines starting with # are
// skipped. It needs at least one key and takes at most MaxKeys.
func ParsePublicKeys(text []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for i, line := range bytes.Split(text, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, err := base64.RawURLEncoding.DecodeString(string(line))
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("token: key file line %d: not a public key (%d bytes of base64url text)", i+1, ed25519.PublicKeySize)
		}
		if len(keys) == MaxKeys {
			return nil, fmt.Errorf("token: key file lists more than %d keys", MaxKeys)
		}
		keys = append(keys, ed25519.PublicKey(k))
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("token: key file lists no key")
	}
	return keys, nil
}
