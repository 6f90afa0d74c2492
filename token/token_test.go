package token

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// seeded returns a deterministic key pair.
func seeded(seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	return priv.Public().(ed25519.PublicKey), priv
}

func TestSignVerify(t *testing.T) {
	pub, priv := seeded(1)
	otherPub, otherPriv := seeded(2)
	tok := Token{Observer: 7, Expires: 1_000, Islands: []uint32{3, 9, 40}}
	b, err := tok.Sign(priv)
	if err != nil || len(b) != tok.Size() {
		t.Fatalf("sign: %d bytes, %v", len(b), err)
	}
	got, err := Verify(b, []ed25519.PublicKey{otherPub, pub}, 1_000)
	if err != nil || got.Observer != 7 || got.Expires != 1_000 || len(got.Islands) != 3 || got.Islands[2] != 40 {
		t.Fatalf("verify: %+v, %v", got, err)
	}
	if _, err := Verify(b, []ed25519.PublicKey{pub}, 1_001); !errors.Is(err, ErrExpired) || Reason(err) != "expired" {
		t.Fatalf("a second past expiry: %v", err)
	}
	if _, err := Verify(b, []ed25519.PublicKey{otherPub}, 0); !errors.Is(err, ErrSignature) {
		t.Fatalf("an untrusted key: %v", err)
	}
	forged, _ := tok.Sign(otherPriv)
	if _, err := Verify(forged, []ed25519.PublicKey{pub}, 0); !errors.Is(err, ErrSignature) {
		t.Fatalf("signed by another key: %v", err)
	}
	// Every single-bit change is refused: the fields are signed, and the
	// signature is checked.
	for i := range b {
		for bit := range 8 {
			c := bytes.Clone(b)
			c[i] ^= 1 << bit
			if _, err := Verify(c, []ed25519.PublicKey{pub}, 0); err == nil {
				t.Fatalf("byte %d bit %d flipped: accepted", i, bit)
			}
		}
	}
	// Every truncation is refused, never a panic.
	for i := range b {
		if _, err := Verify(b[:i], []ed25519.PublicKey{pub}, 0); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
	// A signature over the same bytes without the context does not pass.
	raw := append(bytes.Clone(b[:len(b)-ed25519.SignatureSize]), ed25519.Sign(priv, b[:len(b)-ed25519.SignatureSize])...)
	if _, err := Verify(raw, []ed25519.PublicKey{pub}, 0); !errors.Is(err, ErrSignature) {
		t.Fatalf("a signature without the context: %v", err)
	}
}

func TestSignRefusesMalformed(t *testing.T) {
	_, priv := seeded(1)
	for name, tok := range map[string]Token{
		"observer 0": {Expires: 1},
		"unordered":  {Observer: 1, Islands: []uint32{4, 4}},
		"too many":   {Observer: 1, Islands: make([]uint32, MaxIslands+1)},
	} {
		if _, err := tok.Sign(priv); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestText(t *testing.T) {
	pub, priv := seeded(3)
	b, _ := Token{Observer: 1, Expires: 5}.Sign(priv)
	s := Encode(b)
	if strings.ContainsAny(s, "+/=") {
		t.Fatalf("not unpadded base64url: %s", s)
	}
	back, err := Decode(s)
	if err != nil || !bytes.Equal(back, b) {
		t.Fatalf("decode: %v", err)
	}
	if _, err := Decode("!!"); Reason(err) != "malformed" {
		t.Fatalf("bad text: %v", err)
	}
	keys, err := ParsePublicKeys([]byte("# backend keys\n\n" + EncodePublicKey(pub) + "\n"))
	if err != nil || len(keys) != 1 || !keys[0].Equal(pub) {
		t.Fatalf("public keys: %v", err)
	}
	if _, err := ParsePublicKeys([]byte("# none\n")); err == nil {
		t.Fatal("a key file without keys was accepted")
	}
	if _, err := ParsePublicKeys([]byte("AAAA\n")); err == nil {
		t.Fatal("a short key was accepted")
	}
	p2, err := ParsePrivateKey([]byte(EncodePrivateKey(priv) + "\n"))
	if err != nil || !p2.Equal(priv) {
		t.Fatalf("private key: %v", err)
	}
}

// FuzzVerify: any bytes are a token or an error, never a panic; a token
// that verifies signs back to the same bytes.
func FuzzVerify(f *testing.F) {
	pub, priv := seeded(4)
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 4 {
		tok := Token{Observer: r.Uint64() | 1, Expires: int64(r.Uint32())}
		for i := range n {
			tok.Islands = append(tok.Islands, uint32(i*7+1))
		}
		b, _ := tok.Sign(priv)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := Verify(b, []ed25519.PublicKey{pub}, 0)
		if err != nil {
			if Reason(err) == "" {
				t.Fatalf("an error without a reason: %v", err)
			}
			return
		}
		again, err := tok.Sign(priv)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("a verified token does not sign back to its bytes: %v", err)
		}
	})
}
