// Dialling a dispatcher: unix socket or TCP, TLS and certificate pinning.

package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// socketBaseURL is the URL of requests sent over a unix socket: the host
// part is never resolved.
const socketBaseURL = "http://dispatch-tui.sock"

// ClientOptions configure Dial.
type ClientOptions struct {
	// Token is the bearer token; "" sends none (the socket needs none).
	Token string
	// TLSFingerprint pins the server's certificate by the hex SHA-256 of
	// its DER bytes (colons and a "sha256:" prefix are allowed) instead
	// of verifying it against the system's roots: for the self-signed
	// certificate a daemon generates.
	TLSFingerprint string
}

// Dial returns a client for server: "unix:PATH" or an absolute PATH for
// the daemon's unix socket, "https://host:port" for TLS, or
// "http://host:port" ("host:port") for plain HTTP, which it refuses with a
// token for anything but a loopback address. A comma-separated list names
// several nodes of one cluster: the client fails over between them.
func Dial(server string, opts ClientOptions) (*Client, error) {
	list := SplitServers(server)
	if len(list) <= 1 {
		return dialOne(strings.TrimSpace(server), opts)
	}
	f := &failover{}
	for _, s := range list {
		m, err := dialOne(s, opts)
		if err != nil {
			return nil, err
		}
		f.members = append(f.members, m)
	}
	first := f.members[0]
	return &Client{BaseURL: first.BaseURL, Socket: first.Socket, Token: first.Token, HTTP: first.HTTP, nodes: f}, nil
}

// dialOne is Dial of one server.
func dialOne(server string, opts ClientOptions) (*Client, error) {
	if err := checkOne(server); err != nil {
		return nil, err
	}
	if path, ok := socketPath(server); ok {
		if opts.TLSFingerprint != "" {
			return nil, errors.New("--tls-fingerprint applies to https:// servers, not to the socket " + path)
		}
		tr := &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
		}
		// The socket knows who connects: no token goes there.
		return &Client{BaseURL: socketBaseURL, Socket: path, HTTP: &http.Client{Transport: tr}}, nil
	}
	c := NewClient(server, opts.Token)
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("server %q: want unix:PATH, https://host:port or http://host:port", server)
	}
	switch u.Scheme {
	case "https":
		tc, err := clientTLS(opts.TLSFingerprint)
		if err != nil {
			return nil, err
		}
		c.HTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}
	case "http":
		if opts.TLSFingerprint != "" {
			return nil, fmt.Errorf("--tls-fingerprint needs an https:// server (got %s)", c.BaseURL)
		}
		if opts.Token != "" && !IsLoopback(u.Hostname()) {
			return nil, fmt.Errorf("refusing to send a token in clear to %s: use https://%s (the daemon serves TLS off loopback)", c.BaseURL, u.Host)
		}
	default:
		return nil, fmt.Errorf("server %q: unknown scheme %q (unix, https or http)", server, u.Scheme)
	}
	return c, nil
}

// CheckServer refuses a server address (or comma-separated list) Dial
// cannot mean: one that is neither a socket nor a URL nor host:port ("foo"
// would be looked up as a host name).
func CheckServer(server string) error {
	list := SplitServers(server)
	if len(list) == 0 {
		return checkOne(server)
	}
	for _, s := range list {
		if err := checkOne(s); err != nil {
			return err
		}
	}
	return nil
}

func checkOne(server string) error {
	if _, ok := socketPath(server); ok || strings.Contains(server, "://") {
		return nil
	}
	if _, port, err := net.SplitHostPort(server); err == nil && port != "" {
		return nil
	}
	return fmt.Errorf("server %q: want unix:PATH, an absolute socket path, https://host:port or http://host:port", server)
}

// socketPath reports whether server names a unix socket, and its path.
func socketPath(server string) (string, bool) {
	if p, ok := strings.CutPrefix(server, "unix://"); ok {
		return p, true
	}
	if p, ok := strings.CutPrefix(server, "unix:"); ok {
		return p, true
	}
	if strings.HasPrefix(server, "/") {
		return server, true
	}
	return "", false
}

// clientTLS verifies the server against the system's roots, or against a
// pinned certificate fingerprint.
func clientTLS(fingerprint string) (*tls.Config, error) {
	if fingerprint == "" {
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	want, err := ParseFingerprint(fingerprint)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not checked against any root: the pin replaces
		// it, and VerifyConnection checks the pin on every handshake.
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return checkPin(cs, want) },
	}, nil
}

// checkPin accepts the server's certificate only if its SHA-256 is want.
func checkPin(cs tls.ConnectionState, want []byte) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server sent no certificate")
	}
	got := sha256.Sum256(cs.PeerCertificates[0].Raw)
	if !bytes.Equal(got[:], want) {
		return fmt.Errorf("server certificate fingerprint %s does not match the pinned %s", hex.EncodeToString(got[:]), hex.EncodeToString(want))
	}
	return nil
}

// Fingerprint is the hex SHA-256 of a certificate's DER bytes, as the
// daemon logs it and --tls-fingerprint takes it.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// ParseFingerprint reads a hex SHA-256 fingerprint, with or without
// colons and a "sha256:" prefix.
func ParseFingerprint(s string) ([]byte, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimPrefix(t, "sha256:")
	t = strings.ReplaceAll(t, ":", "")
	b, err := hex.DecodeString(t)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("TLS fingerprint %q: want 64 hex digits (the SHA-256 the daemon logs)", s)
	}
	return b, nil
}
