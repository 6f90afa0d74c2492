package transport

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Files of an identity in its state directory.
const (
	IdentityKeyFile  = "key.pem"  // the private key, PKCS #8 PEM, mode 0600
	IdentityCertFile = "cert.pem" // the self-signed certificate, PEM
)

// identityValidity is how long a kept self-signed certificate is valid.
// Observers pin its fingerprint, which is checked instead of its validity,
// so the dates matter only to tools that read them; a certificate renewed
// before then would change the fingerprint every pinned observer knows.
const identityValidity = 10 * 365 * 24 * time.Hour

// ErrStateMode: the state directory or the key in it can be read by other
// users of the machine, so the key cannot be trusted to be the server's
// alone.
var ErrStateMode = errors.New("transport: state directory or key readable by others")

// Identity loads the server identity kept in dir: its certificate, private
// key and fingerprint. When dir holds none, it makes a self-signed ECDSA
// P-256 certificate (as SelfSigned, valid for ten years) and keeps it there
// first, so that every later run — a restart — presents the same
// fingerprint and pinned observers reconnect. dir is created with mode
// 0700, the key written with mode 0600; a directory or key that others may
// read is refused (ErrStateMode). created reports whether the identity is
// new.
func Identity(dir string) (cert tls.Certificate, fingerprint string, created bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, "", false, fmt.Errorf("transport: state directory: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return tls.Certificate{}, "", false, fmt.Errorf("transport: state directory: %w", err)
	} else if fi.Mode().Perm()&0o077 != 0 {
		return tls.Certificate{}, "", false, fmt.Errorf("%w: %s has mode %v, want 0700", ErrStateMode, dir, fi.Mode().Perm())
	}
	keyPath, certPath := filepath.Join(dir, IdentityKeyFile), filepath.Join(dir, IdentityCertFile)
	cert, err = loadIdentity(keyPath, certPath)
	switch {
	case err == nil:
		return cert, Fingerprint(cert.Certificate[0]), false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return tls.Certificate{}, "", false, err
	}
	cert, fingerprint, err = selfSigned(identityValidity)
	if err != nil {
		return tls.Certificate{}, "", false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return tls.Certificate{}, "", false, err
	}
	// The key first, then the certificate: a run stopped between the two
	// leaves no certificate, and the next run starts over.
	if err := writeNew(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return tls.Certificate{}, "", false, err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644); err != nil {
		return tls.Certificate{}, "", false, err
	}
	return cert, fingerprint, true, nil
}

// loadIdentity reads a kept identity; it wraps fs.ErrNotExist when there is
// none (no certificate).
func loadIdentity(keyPath, certPath string) (tls.Certificate, error) {
	if _, err := os.Stat(certPath); err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: identity: %w", err)
	}
	fi, err := os.Stat(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: identity: %s without its key: %v", certPath, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return tls.Certificate{}, fmt.Errorf("%w: %s has mode %v, want 0600", ErrStateMode, keyPath, fi.Mode().Perm())
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: identity in %s: %w", filepath.Dir(keyPath), err)
	}
	return cert, nil
}

// writeNew writes b to path through a temporary file renamed into place,
// so that a reader never sees half a file.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("transport: identity: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("transport: identity: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("transport: identity: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("transport: identity: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("transport: identity: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("transport: identity: %w", err)
	}
	return nil
}
