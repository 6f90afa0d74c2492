package transport

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestIdentityKept: the first run makes an identity and keeps it in the
// state directory (0700, key 0600); a second run — a restart — loads it and
// presents the same fingerprint. A key others may read, a certificate
// without its key and a corrupt file are refused, never replaced.
func TestIdentityKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "islandserver")
	_, fp, created, err := Identity(dir)
	if err != nil || !created {
		t.Fatalf("first run: created %v, %v", created, err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, IdentityKeyFile): 0o600} {
		fi, err := os.Stat(name)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	cert, fp2, created, err := Identity(dir)
	if err != nil || created || fp2 != fp || Fingerprint(cert.Certificate[0]) != fp {
		t.Fatalf("restart: fingerprint %s → %s, created %v, %v", fp, fp2, created, err)
	}

	key := filepath.Join(dir, IdentityKeyFile)
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Identity(dir); !errors.Is(err, ErrStateMode) {
		t.Fatalf("a key others may read: %v, want ErrStateMode", err)
	}
	_ = os.Chmod(key, 0o600)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Identity(dir); !errors.Is(err, ErrStateMode) {
		t.Fatalf("a directory others may read: %v, want ErrStateMode", err)
	}
	_ = os.Chmod(dir, 0o700)

	if err := os.WriteFile(key, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Identity(dir); err == nil {
		t.Fatal("a corrupt key was accepted")
	}
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Identity(dir); err == nil {
		t.Fatal("a certificate without its key was replaced")
	}
}
