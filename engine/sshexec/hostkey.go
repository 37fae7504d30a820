// Host key checks: pinned, known_hosts, and the errors that say what to do.

package sshexec

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrHostKey is wrapped by every refusal of a server's host key: unknown
// host, changed key, revoked key. The error is a *HostKeyError.
var ErrHostKey = errors.New("host key verification failed")

// HostKeyError describes a refused host key. It wraps ErrHostKey.
type HostKeyError struct {
	Host    string          // address as dialed
	Offered ssh.PublicKey   // the key the server presented
	Known   []ssh.PublicKey // keys on record for Host; empty: host unknown
	Source  string          // known_hosts path, "pinned key", or ""
	Revoked bool            // Offered is marked @revoked in Source
	Err     error           // the underlying callback error, if any

	where []string // "file:line" of each Known key, when from known_hosts
}

func (e *HostKeyError) Error() string {
	var b strings.Builder
	b.WriteString(ErrHostKey.Error())
	b.WriteString(": ")
	offered := describeKey(e.Offered)
	source := e.Source
	if source == "" {
		source = "the accepted host keys"
	}
	var ke *knownhosts.KeyError
	switch {
	case e.Revoked:
		fmt.Fprintf(&b, "host key for %s (%s) is marked @revoked in %s", e.Host, offered, source)
	case len(e.Known) > 0:
		known := make([]string, len(e.Known))
		for i, k := range e.Known {
			known[i] = describeKey(k)
			if i < len(e.where) {
				known[i] += " (" + e.where[i] + ")"
			}
		}
		fmt.Fprintf(&b, "host key for %s changed: server offered %s, %s has %s", e.Host, offered, source, strings.Join(known, ", "))
		if e.Source == pinnedSource {
			b.WriteString("; refusing to connect: update the pinned key if the host was rebuilt")
		} else {
			fmt.Fprintf(&b, "; remove the old key from %s if the change is expected (ssh-keygen -R '%s' -f '%s')", source, knownhosts.Normalize(e.Host), source)
		}
	case e.Err != nil && !errors.As(e.Err, &ke):
		fmt.Fprintf(&b, "host key for %s (%s) refused: %v", e.Host, offered, e.Err)
	default:
		fmt.Fprintf(&b, "host %s is unknown: its key %s is not in %s; add it there if you trust this host", e.Host, offered, source)
	}
	return b.String()
}

// Unwrap returns ErrHostKey and the underlying callback error.
func (e *HostKeyError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrHostKey}
	}
	return []error{ErrHostKey, e.Err}
}

// typeMismatch reports whether none of the known keys has the offered key's
// type, i.e. the server may hold a known key but presented another type.
func (e *HostKeyError) typeMismatch() bool {
	if e.Revoked || len(e.Known) == 0 || e.Offered == nil {
		return false
	}
	for _, k := range e.Known {
		if k.Type() == e.Offered.Type() {
			return false
		}
	}
	return true
}

func describeKey(k ssh.PublicKey) string {
	if k == nil {
		return "(none)"
	}
	return k.Type() + " " + ssh.FingerprintSHA256(k)
}

const pinnedSource = "pinned key"

// Pinned accepts exactly key and refuses any other host key with a
// *HostKeyError.
func Pinned(key ssh.PublicKey) ssh.HostKeyCallback {
	var want []byte
	if key != nil {
		want = key.Marshal()
	}
	return func(host string, _ net.Addr, got ssh.PublicKey) error {
		if key != nil && bytes.Equal(got.Marshal(), want) {
			return nil
		}
		e := &HostKeyError{Host: host, Offered: got, Source: pinnedSource}
		if key != nil {
			e.Known = []ssh.PublicKey{key}
		} else {
			e.Err = errors.New("no pinned key")
		}
		return e
	}
}

// KnownHosts returns a callback that checks host keys against an OpenSSH
// known_hosts file, read once now. Unknown hosts and changed or revoked keys
// are refused with a *HostKeyError naming the file.
func KnownHosts(path string) (ssh.HostKeyCallback, error) {
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(host, remote, key)
		if err == nil {
			return nil
		}
		return newHostKeyError(host, key, path, err)
	}, nil
}

// wrapHostKeyCallback makes every refusal by cb a *HostKeyError.
func wrapHostKeyCallback(cb ssh.HostKeyCallback) ssh.HostKeyCallback {
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(host, remote, key)
		if err == nil {
			return nil
		}
		var he *HostKeyError
		if errors.As(err, &he) {
			return err
		}
		return newHostKeyError(host, key, "", err)
	}
}

// newHostKeyError describes err, a refusal of key by a host key callback,
// filling in what a knownhosts error tells about the keys on record.
func newHostKeyError(host string, key ssh.PublicKey, source string, err error) *HostKeyError {
	e := &HostKeyError{Host: host, Offered: key, Source: source, Err: err}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &ke):
		for _, k := range ke.Want {
			e.Known = append(e.Known, k.Key)
			e.where = append(e.where, fmt.Sprintf("%s:%d", k.Filename, k.Line))
			if e.Source == "" {
				e.Source = k.Filename
			}
		}
	case errors.As(err, &re):
		e.Revoked = true
		if e.Source == "" {
			e.Source = re.Revoked.Filename
		}
	}
	return e
}
