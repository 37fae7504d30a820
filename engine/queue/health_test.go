package queue

import (
	"testing"
	"time"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

func TestSubmitRecordsPreemptibleAndHealthDefaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		always  bool
		spec    *bool
		wantPre bool
		hc      *HealthCheck
		wantHC  *HealthCheck
	}{
		{"omitted takes the default false", false, nil, false, nil, nil},
		{"omitted takes the default true", true, nil, true, nil, nil},
		{"explicit false beats the default", true, boolp(false), false, nil, nil},
		{"health check defaults", false, nil, false, &HealthCheck{Command: []string{"ok"}},
			&HealthCheck{Command: []string{"ok"}, Interval: Duration(30 * time.Second), Timeout: Duration(10 * time.Second), Retries: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.DefaultPreemptible = tc.always })
			s := spec("true")
			s.Scheduling.Preemptible = tc.spec
			s.HealthCheck = tc.hc
			c := e.submit(s)
			for _, got := range []view.Container{c, e.reopen().mustGet(t, c.ID)} {
				if got.Scheduling.Preemptible == nil || *got.Scheduling.Preemptible != tc.wantPre || got.Scheduling.IsPreemptible() != tc.wantPre {
					t.Fatalf("preemptible %v, want %v", got.Scheduling.Preemptible, tc.wantPre)
				}
				if (got.HealthCheck == nil) != (tc.wantHC == nil) || got.HealthCheck != nil &&
					(got.HealthCheck.Interval != tc.wantHC.Interval || got.HealthCheck.Timeout != tc.wantHC.Timeout || got.HealthCheck.Retries != tc.wantHC.Retries) {
					t.Fatalf("health_check %+v, want %+v", got.HealthCheck, tc.wantHC)
				}
			}
		})
	}
}

func (q *Queue) mustGet(t *testing.T, id string) view.Container {
	t.Helper()
	c, ok := q.Get(id)
	if !ok {
		t.Fatalf("%s not found", id)
	}
	return c
}

func TestRequeuePreemptedSpendsNoAttempt(t *testing.T) {
	e := newEnv(t, nil)
	s := spec("true")
	s.MaxAttempts = 1
	id := e.submit(s).ID
	e.toState(id, Running)
	e.mustTx(id, func(tx *Tx, c *Container) error {
		return tx.RequeuePreempted(c, "instance i-1 was interrupted (spot): reclaimed")
	})
	c := e.get(id)
	if c.State != Queued || c.Attempts != 0 || c.InstanceID != "" {
		t.Fatalf("after a preemption: %s, %d attempts, on %q", c.State, c.Attempts, c.InstanceID)
	}
	// The one attempt is still there to spend.
	e.toState(id, Running)
	e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Finish(c, 0, e.clk.Now()) })
	if c := e.get(id); c.State != Complete || c.Attempts != 1 {
		t.Fatalf("then: %s after %d attempts", c.State, c.Attempts)
	}
}

func TestFinishUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    string
		attempts  int
		kill      bool
		wantState State
		wantCode  ReasonCode
	}{
		{"on-failure with attempts left: retried", RestartOnFailure, 2, false, Queued, ReasonUnhealthy},
		{"on-failure, attempts used up", RestartOnFailure, 1, false, Cancelled, ReasonUnhealthy},
		{"never", RestartNever, 3, false, Cancelled, ReasonUnhealthy},
		{"an operator's kill wins", RestartOnFailure, 3, true, Cancelled, ReasonKilled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			s := spec("true")
			s.MaxAttempts, s.RestartPolicy = tc.attempts, tc.policy
			id := e.submit(s).ID
			e.toState(id, Running)
			h := &runner.Health{State: runner.HealthUnhealthy, Failures: 3, LastResult: "exit status 1", Killed: true}
			e.mustTx(id, func(tx *Tx, c *Container) error {
				if tc.kill {
					tx.RequestKill(c, "killed by operator")
				}
				if !tx.SetHealth(c, h) || tx.SetHealth(c, h) {
					t.Errorf("SetHealth reported no change, or a change on the same health twice")
				}
				return tx.FinishUnhealthy(c, 143, e.clk.Now(), "unhealthy: health check failed 3 times in a row")
			})
			c := e.get(id)
			if c.State != tc.wantState || c.ReasonCode != tc.wantCode && c.State.Final() {
				t.Fatalf("%s %s %q, want %s %s", c.State, c.ReasonCode, c.Reason, tc.wantState, tc.wantCode)
			}
			if c.Health == nil || c.Health.State != runner.HealthUnhealthy {
				t.Fatalf("view health %+v", c.Health)
			}
			if tc.wantState == Cancelled && (c.ExitCode == nil || *c.ExitCode != 143) {
				t.Fatalf("exit code %v, want 143", c.ExitCode)
			}
		})
	}
}
