// The in-memory runner's health checks, judged by their command on the driver's clock.

package fake

import (
	"strconv"
	"time"

	"dispatch-tui/engine/runner"
)

// The in-memory runner's health checks. A check command is judged as a
// container command would run (Cmd, "true", "false", "sleep N"): it passes
// when it exits 0 within the check's timeout, and every check of a
// container gives the same result. Checks happen at started + k×interval,
// computed when asked, so they follow the driver's clock with no timers;
// after retries failures in a row the runner kills the container with TERM
// (KILL kill grace later, for one that ignores TERM), as the real runner
// does.

// healthKillGrace is the real runner's default TERM-to-KILL delay.
const healthKillGrace = 10 * time.Second

// healthSim is one container's health check.
type healthSim struct {
	hc     runner.HealthCheck
	pass   bool
	result string // every check's LastResult
}

func newHealthSim(hc *runner.HealthCheck) *healthSim {
	if hc == nil {
		return nil
	}
	h := &healthSim{hc: *hc}
	if hc.Command[0] == Unrunnable {
		h.result = "cannot run " + strconv.Quote(hc.Command[0]) + ": no such file or directory"
		return h
	}
	dur, code := behaviour(hc.Command)
	switch {
	case dur == forever || dur > hc.Timeout:
		h.result = "timed out after " + hc.Timeout.String()
	case code != 0:
		h.result = "exit status " + strconv.Itoa(code)
	default:
		h.pass, h.result = true, "ok"
	}
	return h
}

// unhealthyEnd is when, with which code and signal, the runner kills c for
// failing its health check (ok false: never). The caller compares it with
// c's other ends.
func (c *ctr) unhealthyEnd() (at time.Time, code int, signal string, ok bool) {
	h := c.health
	if h == nil || h.pass {
		return time.Time{}, 0, "", false
	}
	at = c.started.Add(time.Duration(h.hc.Retries) * h.hc.Interval)
	if c.ignoreTerm {
		return at.Add(healthKillGrace), ExitKill, runner.SignalKill, true
	}
	return at, ExitTerm, runner.SignalTerm, true
}

// healthAt is c's health as of t (now, or when it ended); nil without a
// health check.
func (c *ctr) healthAt(t time.Time) *runner.Health {
	h := c.health
	if h == nil {
		return nil
	}
	out := &runner.Health{State: runner.HealthStarting}
	n := 0
	if d := t.Sub(c.started); d > 0 {
		n = int(d / h.hc.Interval)
	}
	if !h.pass {
		n = min(n, h.hc.Retries)
	}
	if n == 0 {
		return out
	}
	out.LastCheck = c.started.Add(time.Duration(n) * h.hc.Interval).UTC()
	out.LastResult = h.result
	switch {
	case h.pass:
		out.State = runner.HealthHealthy
	case n >= h.hc.Retries:
		out.State, out.Failures, out.Killed = runner.HealthUnhealthy, n, true
	default:
		out.Failures = n
	}
	return out
}
