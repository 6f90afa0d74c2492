package main

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/islandsync/islandsync/token"
)

// TestKeygenMintVerify: the keys keygen writes and the token mint prints
// verify as islandserver verifies them, with the expiry and islands asked
// for; show reads the token back.
func TestKeygenMintVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	now := time.Unix(1_800_000_000, 0)
	var out, errs bytes.Buffer
	if code := run([]string{"keygen", "-dir", dir}, now, &out, &errs); code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, errs.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, "token.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode: %v", err)
	}
	if code := run([]string{"keygen", "-dir", dir}, now, &out, &errs); code != 1 {
		t.Fatalf("keygen over an existing key: exit %d", code)
	}
	out.Reset()
	if code := run([]string{"mint", "-key", filepath.Join(dir, "token.key"), "-observer", "7", "-ttl", "1h", "-islands", "40,3,9,3"}, now, &out, &errs); code != 0 {
		t.Fatalf("mint: exit %d: %s", code, errs.String())
	}
	text := strings.TrimSpace(out.String())
	pubText, _ := os.ReadFile(filepath.Join(dir, "token.pub"))
	keys, err := token.ParsePublicKeys(pubText)
	if err != nil {
		t.Fatal(err)
	}
	b, err := token.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := token.Verify(b, keys, now.Unix()+3600)
	if err != nil || tok.Observer != 7 || tok.Expires != now.Unix()+3600 || len(tok.Islands) != 3 || tok.Islands[0] != 3 {
		t.Fatalf("the minted token: %+v, %v", tok, err)
	}
	if _, err := token.Verify(b, []ed25519.PublicKey{make([]byte, 32)}, now.Unix()); err == nil {
		t.Fatal("verified with another key")
	}
	out.Reset()
	if code := run([]string{"show", text}, now, &out, &errs); code != 0 || !strings.Contains(out.String(), "observer 7, islands [3 9 40]") {
		t.Fatalf("show: exit %d, %q", code, out.String())
	}
}

func TestArguments(t *testing.T) {
	bad := [][]string{
		nil, {"nope"}, {"keygen"}, {"mint", "-observer", "1"}, {"mint", "-key", "k", "-observer", "0"},
		{"mint", "-key", "k", "-observer", "1", "-ttl", "0s"}, {"mint", "-key", "k", "-observer", "1", "-islands", "x"},
		{"show"}, {"keygen", "-bogus"},
	}
	for _, args := range bad {
		var out, errs bytes.Buffer
		if code := run(args, time.Unix(0, 0), &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs.String())
		}
	}
	var out, errs bytes.Buffer
	if code := run([]string{"show", "AAAA"}, time.Unix(0, 0), &out, &errs); code != 1 {
		t.Errorf("show of no token: exit %d, want 1", code)
	}
}
