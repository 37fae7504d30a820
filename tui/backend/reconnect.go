// A remote backend's errors: fatal ones, and retrying the others with back-off.

package backend

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"dispatch-tui/engine/api"
)

// FatalError is a snapshot error that retrying cannot fix: the dispatcher
// refuses this console (a wrong or revoked token: 401/403), the address is
// not a dispatcher's API (404), or its certificate is not the one trusted.
// The console exits with it, as the CLI would.
type FatalError struct{ Err error }

func (e *FatalError) Error() string {
	return e.Err.Error() + " (not retried: check --connect and the token, then start the console again)"
}
func (e *FatalError) Unwrap() error { return e.Err }

// IsFatal reports whether err is, or wraps, a FatalError.
func IsFatal(err error) bool {
	var fe *FatalError
	return errors.As(err, &fe)
}

// RetryError is a snapshot error the console may recover from (the
// dispatcher is down, restarting or unreachable): the next attempt is not
// before At.
type RetryError struct {
	Err     error
	Attempt int       // failed attempts in a row
	At      time.Time // when the next attempt is made
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("%v (attempt %d, retrying at %s)", e.Err, e.Attempt, e.At.Format(time.TimeOnly))
}
func (e *RetryError) Unwrap() error { return e.Err }

// Back-off between attempts after a failed snapshot: doubling from
// retryFirst up to retryMax.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// permanent tells an error retrying cannot fix from one it may (no
// connection, a timeout, a server error while the daemon restarts).
func permanent(err error) bool {
	var ae *api.APIError
	if errors.As(err, &ae) {
		switch {
		case ae.Status == http.StatusRequestTimeout, ae.Status == http.StatusTooManyRequests:
			return false
		case ae.Status >= 400 && ae.Status < 500:
			return true
		}
		return false
	}
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) {
		return true
	}
	// api.Dial's pinned certificate check.
	return strings.Contains(err.Error(), "does not match the pinned")
}

// backoff is a Remote's state between failed snapshots. Guarded by the
// Remote's mu.
type backoff struct {
	fails   int
	lastErr error
	next    time.Time
}

// wait returns the error to give without trying while the back-off runs.
func (b *backoff) wait(now time.Time) error {
	if b.fails == 0 || !now.Before(b.next) {
		return nil
	}
	return &RetryError{Err: b.lastErr, Attempt: b.fails, At: b.next}
}

// failed records a failed attempt and returns the error to give.
func (b *backoff) failed(now time.Time, err error) error {
	if permanent(err) {
		return &FatalError{Err: err}
	}
	b.fails++
	b.lastErr = err
	b.next = now.Add(min(retryFirst<<min(b.fails-1, 10), retryMax))
	return &RetryError{Err: err, Attempt: b.fails, At: b.next}
}

func (b *backoff) ok() { *b = backoff{} }
