package token

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/token")

const goldenDir = "../testdata/golden/token"

// goldenKey signs the golden tokens: the seed is 32 bytes of 0x01.
func goldenKey() ed25519.PrivateKey { _, priv := seeded(1); return priv }

// TestGolden compares signed tokens byte for byte with
// testdata/golden/token (Ed25519 signatures are deterministic); -update
// rewrites them with a companion .txt saying what each holds.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		tok  Token
	}{
		{"all-islands", Token{Observer: 7, Expires: 1_900_000_000}},
		{"three-islands", Token{Observer: 0x0102030405060708, Expires: 1_900_000_000, Islands: []uint32{3, 9, 40}}},
	}
	pub := goldenKey().Public().(ed25519.PublicKey)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.tok.Sign(goldenKey())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(goldenDir, c.name+".bin")
			if *update {
				txt := fmt.Sprintf("connect token: observer %d, expires %d (Unix s), islands %v (none: every island)\n"+
					"signed with the Ed25519 key whose seed is 32 bytes of 0x01; public key %s\ntext form %s\n%s",
					c.tok.Observer, c.tok.Expires, c.tok.Islands, EncodePublicKey(pub), Encode(b), hex.Dump(b))
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(goldenDir, c.name+".txt"), []byte(txt), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./token -update)", err)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("token bytes differ from %s:\n got %x\nwant %x", path, b, want)
			}
			got, err := Verify(want, []ed25519.PublicKey{pub}, c.tok.Expires)
			if err != nil || got.Observer != c.tok.Observer || len(got.Islands) != len(c.tok.Islands) {
				t.Fatalf("the golden does not verify: %+v %v", got, err)
			}
		})
	}
}
