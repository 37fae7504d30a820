// The self-signed TLS certificate kept in the state dir.

package launch

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"dispatch-tui/engine/secretfile"
)

// Files of the self-signed pair in the state dir.
const (
	selfSignedCert = "tls-cert.pem"
	selfSignedKey  = "tls-key.pem"
)

// loadCertificate returns the configured pair, or else the self-signed
// pair in stateDir, made on first use for host (the listen address's
// host), localhost and the machine's name.
func loadCertificate(certFile, keyFile, stateDir, host string) (tls.Certificate, error) {
	if certFile != "" {
		if err := secretfile.Stat(keyFile); err != nil {
			return tls.Certificate{}, fmt.Errorf("dispatcher.tls_key: %w", err)
		}
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("load dispatcher.tls_cert/tls_key: %w", err)
		}
		return c, nil
	}
	certFile, keyFile = filepath.Join(stateDir, selfSignedCert), filepath.Join(stateDir, selfSignedKey)
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err == nil {
		if err := secretfile.Stat(keyFile); err != nil {
			return tls.Certificate{}, fmt.Errorf("the self-signed certificate's key: %w", err)
		}
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("load the self-signed certificate (remove %s and %s to make a new one): %w", certFile, keyFile, err)
	}
	certPEM, keyPEM, err := selfSign(host, time.Now())
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := writeNew(keyFile, keyPEM); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeNew(certFile, certPEM); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// writeNew writes a file readable by its owner only, refusing to replace
// one.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// selfSign makes an ECDSA P-256 certificate valid for ten years.
func selfSign(host string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generate TLS serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "dispatch-tui"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, name)
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if ip == nil && host != "" && host != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create TLS certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode TLS key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
