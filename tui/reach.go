// Why the dispatcher cannot be reached, in words an operator can act on.

package tui

// Why the dispatcher cannot be reached, in words an operator can act on
// rather than the dial error ("Get \"http://…\": dial tcp …: connect:
// connection refused").

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// reachError says why a snapshot failed: for the usual ways a dispatcher
// is unreachable, what it means and what to check; else the error.
func reachError(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the dispatcher refuses connections (is it running? `dispatch-tui --daemon`)"
	case errors.Is(err, syscall.ENOENT):
		return "no dispatcher socket there (is the daemon running? check --connect)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the dispatcher closed the connection (restarting?)"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return "no answer from the dispatcher in time (busy, or the network is down)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the dispatcher's host (check the network and --connect)"
	}
	return err.Error()
}
