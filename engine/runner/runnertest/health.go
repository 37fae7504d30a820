// The conformance cases of health checks.

package runnertest

import (
	"encoding/json"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// healthCases are the cases of runner.HealthCheck, Status.Health and
// EndReason(); Run runs them after cases.
var healthCases = []struct {
	name string
	run  func(e *env)
}{
	{"a health check that keeps failing kills the container, reported unhealthy", func(e *env) {
		e.startSpec(runner.Spec{ID: "sick", Command: e.tg.Command(Program{Forever: true}),
			HealthCheck: &runner.HealthCheck{Command: e.tg.Command(Program{Exit: 1}), Interval: 200 * time.Millisecond, Timeout: 200 * time.Millisecond, Retries: 2}})
		st := e.waitState("sick", runner.StateExited)
		h := st.Health
		if st.EndReason() != runner.EndUnhealthy || st.Signal != runner.SignalTerm || st.ExitCode != exitTerm ||
			h == nil || h.State != runner.HealthUnhealthy || h.Failures != 2 || h.LastResult == "" || h.LastCheck.IsZero() {
			e.t.Fatalf("status %+v, health %+v; want ended unhealthy by TERM after 2 failures", st, h)
		}
		e.wantExit("forget", e.client().Forget(e.ctx, "sick"), 0, "")
	}},
	{"a passing health check reports healthy, and a kill is no unhealthy end", func(e *env) {
		e.startSpec(runner.Spec{ID: "well", Command: e.tg.Command(Program{Forever: true}),
			HealthCheck: &runner.HealthCheck{Command: e.tg.Command(Program{Exit: 0}), Interval: 300 * time.Millisecond, Timeout: 300 * time.Millisecond, Retries: 5}})
		e.start("plain", Program{Forever: true})
		var st runner.Status
		wait.Until(e.t, "well healthy", waitFor, func() bool {
			var ok bool
			st, ok = e.status("well")
			return ok && st.Health != nil && st.Health.State == runner.HealthHealthy
		})
		if st.State != runner.StateRunning || st.Health.Failures != 0 || st.Health.LastResult != "ok" || st.Health.LastCheck.IsZero() {
			e.t.Fatalf("healthy: %+v health %+v", st, st.Health)
		}
		if p, _ := e.status("plain"); p.Health != nil {
			e.t.Fatalf("a container without a health check reports health %+v", p.Health)
		}
		e.wantExit("kill", e.client().Kill(e.ctx, "well", runner.SignalTerm), 0, "")
		if st := e.waitState("well", runner.StateExited); st.EndReason() != "" || st.Signal != runner.SignalTerm {
			e.t.Fatalf("killed by the dispatcher: %+v", st)
		}
		e.wantExit("kill", e.client().Kill(e.ctx, "plain", runner.SignalKill), 0, "")
	}},
	{"a bad health check is refused before anything starts", func(e *env) {
		for _, hc := range []runner.HealthCheck{
			{Interval: time.Second, Timeout: time.Second, Retries: 1},
			{Command: []string{"true"}, Interval: time.Second, Timeout: 2 * time.Second, Retries: 1},
			{Command: []string{"true"}, Interval: time.Second, Timeout: time.Second},
		} {
			spec, _ := json.Marshal(runner.Spec{ID: "bad", Command: e.tg.Command(Program{Exit: 0}), HealthCheck: &hc})
			_, err := e.raw("start bad", string(spec))
			e.wantExit("start", err, 2, "health_check.")
		}
		if sts := e.list(); len(sts) != 0 {
			e.t.Fatalf("list after refused starts: %+v", sts)
		}
	}},
}

// startSpec starts spec and fails the test if it cannot.
func (e *env) startSpec(spec runner.Spec) {
	e.t.Helper()
	if err := e.client().Start(e.ctx, spec); err != nil {
		e.t.Fatalf("start %s: %v", spec.ID, err)
	}
}
