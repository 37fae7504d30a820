// What kind of failure a store's error is: one classification for the
// metrics, the "store unavailable" warning and its advice (docs/design.md
// §10.1), whatever the store.

package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// ErrorKind is a kind of store failure.
type ErrorKind string

// The kinds, in the order /metrics lists them.
const (
	// ErrUnavailable: the server cannot be reached or went away (down,
	// restarting, a cut network, a call that timed out).
	ErrUnavailable ErrorKind = "unavailable"
	// ErrFull: no room to write (the state dir's disk, or the database
	// server's).
	ErrFull ErrorKind = "full"
	// ErrAuth: the server refused the credentials.
	ErrAuth ErrorKind = "auth"
	// ErrOther: anything else.
	ErrOther ErrorKind = "other"
)

// ErrorKinds are the kinds, each once.
var ErrorKinds = []ErrorKind{ErrUnavailable, ErrFull, ErrAuth, ErrOther}

// KindOf classifies err. A PostgreSQL error is told by its SQLSTATE
// (class 08 connection, 57P admin or crash shutdown, 53100 disk full,
// 28 authorization); a system error by its errno.
func KindOf(err error) ErrorKind {
	var sql interface{ SQLState() string }
	if errors.As(err, &sql) {
		switch code := sql.SQLState(); {
		case code == "53100":
			return ErrFull
		case strings.HasPrefix(code, "28"):
			return ErrAuth
		case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57P"), code == "53300":
			return ErrUnavailable
		}
		return ErrOther
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return ErrFull
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, net.ErrClosed):
		return ErrUnavailable
	}
	// A network call's failure (a syscall.Errno alone is a net.Error
	// too, so the type is what tells).
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return ErrUnavailable
	}
	return ErrOther
}

// Advice is what an operator should do about a failure of kind k on a
// store of kind store ("bolt" or "postgres").
func Advice(k ErrorKind, storeKind string) string {
	pg := storeKind == "postgres"
	switch {
	case k == ErrFull && pg:
		return "free space on the PostgreSQL server's disk"
	case k == ErrFull:
		return "free space on the state_dir's disk"
	case k == ErrAuth:
		return "check the user and password in [store] url (or url_file)"
	case pg:
		return "check the PostgreSQL server"
	}
	return "check the state_dir's disk"
}
