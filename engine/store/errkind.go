// What kind of failure a store's error is (view.StoreErrorKind): one
// classification for the metrics, the "store unavailable" warning and its
// advice (docs/design.md §10.1), whatever the store.

package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"dispatch-tui/engine/view"
)

// KindOf classifies err. A PostgreSQL error is told by its SQLSTATE
// (class 08 connection, 57P admin or crash shutdown, 53100 disk full,
// 28 authorization); a system error by its errno.
func KindOf(err error) view.StoreErrorKind {
	var sql interface{ SQLState() string }
	if errors.As(err, &sql) {
		switch code := sql.SQLState(); {
		case code == "53100":
			return view.StoreFull
		case strings.HasPrefix(code, "28"):
			return view.StoreAuth
		case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57P"), code == "53300":
			return view.StoreUnavailable
		}
		return view.StoreOther
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return view.StoreFull
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, net.ErrClosed):
		return view.StoreUnavailable
	}
	// A network call's failure (a syscall.Errno alone is a net.Error
	// too, so the type is what tells).
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return view.StoreUnavailable
	}
	return view.StoreOther
}
