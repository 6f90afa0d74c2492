package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// ALPN is the application protocol the TLS handshake negotiates: it names
// the islandsync protocol version, so a peer of another version fails the
// handshake instead of misreading the stream.
const ALPN = "islandsync/1"

// SelfSigned makes a fresh ECDSA P-256 certificate for localhost,
// 127.0.0.1 and ::1, valid for 30 days, held only in memory. It returns the
// certificate and its fingerprint (see Fingerprint), which observers pin.
func SelfSigned() (tls.Certificate, string, error) { return selfSigned(30 * 24 * time.Hour) }

// selfSigned is SelfSigned valid for the given time.
func selfSigned(validity time.Duration) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "islandsync self-signed"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  loopbackIPs(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, Fingerprint(der), nil
}

// Fingerprint returns the SHA-256 of a DER certificate as lowercase hex.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// ServerTLS returns the server's TLS 1.3 configuration for cert.
func ServerTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13}
}

// ErrPinMismatch: the server's certificate is not the pinned one.
var ErrPinMismatch = errors.New("transport: server certificate does not match the pinned fingerprint")

// ClientTLS returns an observer's TLS 1.3 configuration. With a pin (the
// server's certificate fingerprint, hex, colons allowed) the connection is
// accepted exactly when the server's leaf certificate has that SHA-256,
// whatever signed it. Without a pin the certificate must verify against
// roots (nil: the system's) for serverName, as for any TLS client.
func ClientTLS(pin, serverName string, roots *x509.CertPool) (*tls.Config, error) {
	c := &tls.Config{NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13, ServerName: serverName, RootCAs: roots}
	if pin == "" {
		return c, nil
	}
	want, err := hex.DecodeString(strings.ReplaceAll(strings.ToLower(pin), ":", ""))
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("transport: pin must be a SHA-256 fingerprint, 64 hex digits")
	}
	// The chain is not checked against roots: the pin is the trust anchor.
	c.InsecureSkipVerify = true
	c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return ErrPinMismatch
		}
		sum := sha256.Sum256(raw[0])
		if subtle.ConstantTimeCompare(sum[:], want) != 1 {
			return ErrPinMismatch
		}
		return nil
	}
	return c, nil
}
