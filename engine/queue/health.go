// A container's health check as submitted and stored, and its outcome.

package queue

import (
	"time"

	"dispatch-tui/engine/runner"
)

// healthWithDefaults returns a copy of h with omitted fields filled in.
func healthWithDefaults(h *HealthCheck) *HealthCheck {
	r := h.Runner()
	if r == nil {
		return nil
	}
	return &HealthCheck{Command: append([]string(nil), r.Command...), Interval: Duration(r.Interval), Timeout: Duration(r.Timeout), Retries: r.Retries}
}

// SetHealth records what a runner reports of c's health check (in memory:
// see Container.Health). It reports whether the state changed, and records
// an event when it did.
func (tx *Tx) SetHealth(c *Container, h *runner.Health) bool {
	if h == nil {
		return false
	}
	old := c.Health
	if old != nil && old.State == h.State && old.Failures == h.Failures && old.LastCheck.Equal(h.LastCheck) &&
		old.LastResult == h.LastResult && old.LastOutput == h.LastOutput {
		return false
	}
	v := *h
	c.Health = &v
	tx.q.changedLocked(c)
	if old == nil || old.State != h.State {
		why := h.LastResult
		if h.LastOutput != "" {
			why += ": " + h.LastOutput
		}
		tx.q.addEventLocked(tx.now, "scheduler", "health", c.ID, h.State, why)
		return true
	}
	return false
}

// FinishUnhealthy records that the runner killed a Running container for
// failing its health check: under on-failure it is retried while attempts
// remain, else it ends Cancelled UNHEALTHY with its exit code.
func (tx *Tx) FinishUnhealthy(c *Container, exitCode int, finishedAt time.Time, why string) error {
	if c.State != Running {
		return &TransitionError{ID: c.ID, From: c.State, To: Cancelled}
	}
	if c.KillRequested {
		return tx.Finish(c, exitCode, finishedAt)
	}
	if c.RestartPolicy == RestartOnFailure && c.Attempts < c.MaxAttempts {
		if err := tx.Requeue(c, why+", retrying"); err != nil {
			return err
		}
		c.ReasonCode = ReasonUnhealthy
		return nil
	}
	code := exitCode
	c.ExitCode = &code
	if err := tx.Cancel(c, ReasonUnhealthy, why); err != nil {
		return err
	}
	c.FinishedAt = finishedAt.UTC()
	return nil
}
