// Types whose instances keep failing to boot: counted, backed off, reported.

package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

// BootFailuresReported is how many instances of one type in a row must
// fail to boot (shut down by timeout_booting or a failed runner
// deployment, with no successful boot in between) before creates of that
// type back off and the scheduler says the type fails to boot.
const BootFailuresReported = 3

// Creates of a failing type are retried, not stopped (an operator may fix
// the host or the image): first after bootRetryFirst, doubling up to
// bootRetryMax.
const (
	bootRetryFirst = 30 * time.Second
	bootRetryMax   = 10 * time.Minute
)

// bootFailures is one instance type's run of failed boots.
type bootFailures struct {
	n       int
	lastErr string
	retryAt time.Time // no create of the type before this (n >= BootFailuresReported)
}

// BootFailingError is Create's answer for a type whose instances keep
// failing to boot, until the next retry at Until.
type BootFailingError struct {
	Type     string
	Failures int
	Err      string // the last failure
	Until    time.Time
}

func (e *BootFailingError) Error() string {
	return fmt.Sprintf("instances of type %s fail to boot: %s", e.Type, e.Err)
}

// deployError is a boot step that got an answer and failed (the runner
// could not be installed, or does not run): unlike a host not up yet, it
// will not get better by waiting for timeout_booting.
type deployError struct{ err error }

func (e *deployError) Error() string { return e.err.Error() }
func (e *deployError) Unwrap() error { return e.err }

// definiteBootError tells whether err, from a booting instance's probe,
// is a failure of the boot rather than a host still starting.
func definiteBootError(stage string, err error) bool {
	var de *deployError
	if errors.As(err, &de) {
		return true
	}
	// The runner was deployed (or deployment is off) and "runner list"
	// ran and failed: e.g. "command not found".
	var ee *runner.ExitError
	return stage == "runner list" && errors.As(err, &ee)
}

// bootFailedLocked shuts down a booting instance that failed to boot
// (why: the step that failed and its error) and counts the failure
// against its type.
func (p *Pool) bootFailedLocked(w *instance, now time.Time, why string) {
	typ := w.itype.Name
	bf := p.bootFails[typ]
	if bf == nil {
		bf = &bootFailures{}
		p.bootFails[typ] = bf
	}
	bf.n++
	bf.lastErr = why
	msg := fmt.Sprintf("boot failed: %s", why)
	if bf.n >= BootFailuresReported {
		wait := clock.Backoff(bootRetryFirst, bootRetryMax, bf.n-BootFailuresReported+1)
		bf.retryAt = now.Add(wait)
		msg = fmt.Sprintf("%s (%d %s instances in a row; next create of the type after %s)", msg, bf.n, typ, wait)
	}
	p.eventLocked(now, w.v.ID, EventBootError, msg, slog.LevelWarn)
	w.v.LastError = why
	w.rowChanged()
	w.shutdown(now, "boot failed: "+why)
}

// bootOKLocked ends typ's run of failed boots.
func (p *Pool) bootOKLocked(typ string) {
	delete(p.bootFails, typ)
}

// bootFailingLocked returns the error Create gives for typ while its
// creates back off, or nil.
func (p *Pool) bootFailingLocked(typ string, now time.Time) error {
	bf := p.bootFails[typ]
	if bf == nil || bf.n < BootFailuresReported || !now.Before(bf.retryAt) {
		return nil
	}
	return &BootFailingError{Type: typ, Failures: bf.n, Err: bf.lastErr, Until: bf.retryAt}
}

// BootFailing returns the last boot error of typeName if at least
// BootFailuresReported of its instances in a row failed to boot, and ""
// otherwise (including after a successful boot).
func (p *Pool) BootFailing(typeName string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bf := p.bootFails[typeName]; bf != nil && bf.n >= BootFailuresReported {
		return bf.lastErr
	}
	return ""
}
