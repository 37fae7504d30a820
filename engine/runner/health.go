// Health checks: what the runner runs beside a container, and their defaults.

package runner

import (
	"fmt"
	"time"
)

// HealthCheck is a command the runner runs beside a container, with the
// container's environment and working directory (inside its image, through
// "docker exec", when it has one), every Interval, each run cut off after
// Timeout. After Retries failures in a row (a non-zero exit, a timeout, or
// a command that cannot run) the runner kills the container (TERM, then
// KILL after its kill grace) and reports it ended with EndUnhealthy.
type HealthCheck struct {
	Command  []string      `json:"command"`
	Interval time.Duration `json:"interval"`
	Timeout  time.Duration `json:"timeout"`
	Retries  int           `json:"retries"`
}

// Defaults of a health check's omitted (zero) fields. The timeout is also
// never longer than the interval.
const (
	DefaultHealthInterval = 30 * time.Second
	DefaultHealthTimeout  = 10 * time.Second
	DefaultHealthRetries  = 3
)

// WithDefaults returns h with omitted (zero) fields set to their defaults.
func (h HealthCheck) WithDefaults() HealthCheck {
	if h.Interval == 0 {
		h.Interval = DefaultHealthInterval
	}
	if h.Timeout == 0 {
		h.Timeout = min(DefaultHealthTimeout, h.Interval)
	}
	if h.Retries == 0 {
		h.Retries = DefaultHealthRetries
	}
	return h
}

// Health states a runner reports.
const (
	HealthStarting  = "starting"  // no check has passed yet, and fewer than Retries failed
	HealthHealthy   = "healthy"   // the last check passed
	HealthUnhealthy = "unhealthy" // Retries checks failed in a row: killed
)

// EndUnhealthy is Status.EndReason() for a container the runner killed
// because its health check failed Retries times in a row.
const EndUnhealthy = "unhealthy"

// Health is what a runner reports of a container's health check.
type Health struct {
	State string `json:"state"`
	// Failures is how many checks in a row failed (0 after one passes).
	Failures int `json:"failures"`
	// LastCheck is when the last check ended; zero before the first.
	LastCheck time.Time `json:"last_check,omitzero"`
	// LastResult is the last check's outcome: "ok", "exit status N",
	// "timed out after D" or why it could not run.
	LastResult string `json:"last_result,omitempty"`
	// LastOutput is the end of the last check's output (stdout, then
	// stderr), at most MaxHealthOutput bytes.
	LastOutput string `json:"last_output,omitempty"`
	// Killed: Retries checks failed in a row and the runner killed (or is
	// killing) the container for it; once it has exited, its EndReason()
	// is EndUnhealthy.
	Killed bool `json:"killed,omitempty"`
}

// MaxHealthOutput bounds Health.LastOutput: it is a snippet for people,
// travelling in every "runner list".
const MaxHealthOutput = 256

// validateHealth checks a spec's health check, fields named as in a
// submitted container.
func validateHealth(h *HealthCheck) error {
	if len(h.Command) == 0 {
		return specErr("health_check.command", "must not be empty")
	}
	for i, a := range h.Command {
		f := fmt.Sprintf("health_check.command[%d]", i)
		if err := checkString(f, a); err != nil {
			return err
		}
		if len(a) > MaxArgBytes {
			return specErr(f, "is %d bytes, more than the kernel takes in one argument (%d, MAX_ARG_STRLEN)", len(a), MaxArgBytes)
		}
	}
	if h.Command[0] == "" {
		return specErr("health_check.command[0]", "must not be empty (it names the program to run)")
	}
	switch {
	case h.Interval <= 0:
		return specErr("health_check.interval", "must be positive (e.g. \"30s\")")
	case h.Timeout <= 0:
		return specErr("health_check.timeout", "must be positive (e.g. \"10s\")")
	case h.Timeout > h.Interval:
		return specErr("health_check.timeout", "%v is longer than the interval %v", h.Timeout, h.Interval)
	case h.Retries < 1:
		return specErr("health_check.retries", "must be at least 1")
	}
	return nil
}
