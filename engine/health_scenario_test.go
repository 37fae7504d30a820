package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

func healthCheck(cmd []string, interval time.Duration, retries int) specOpt {
	return func(s *queue.Spec) {
		s.HealthCheck = &queue.HealthCheck{Command: cmd, Interval: queue.Duration(interval), Retries: retries}
	}
}

func restartOnFailure(s *queue.Spec) { s.RestartPolicy = queue.RestartOnFailure }

// A container whose health check keeps failing is killed by its runner and
// ends "unhealthy": under on-failure it is retried until max_attempts, then
// Cancelled UNHEALTHY; the health state is on the record and in events.
func TestUnhealthyContainerIsKilledAndRetriedUnderOnFailure(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	id := h.submit(-1, 0, healthCheck([]string{"false"}, 5*time.Second, 2), restartOnFailure, maxAttempts(2))
	c := h.container(id)
	if hc := c.HealthCheck; hc == nil || hc.Timeout != queue.Duration(5*time.Second) || hc.Retries != 2 {
		t.Fatalf("stored health_check %+v, want the default timeout filled in (min(10s, interval))", hc)
	}
	first := h.runningOn(id, 30)
	h.until("first check failed", 20, func() bool {
		hs := h.container(id).Health
		return hs != nil && hs.Failures == 1 && hs.State == runner.HealthStarting
	})
	h.until(id+" requeued as unhealthy", 30, func() bool { return h.container(id).Attempts == 1 && h.state(id) != queue.Running })
	if ev := h.eventsOf(id); !strings.Contains(ev, "health unhealthy") || !strings.Contains(ev, "unhealthy: health check failed 2 times in a row (last: exit status 1), retrying") {
		t.Fatalf("events of %s lack the unhealthy end: %s", id, ev)
	}
	h.until(id+" cancelled", 90, func() bool { return h.state(id) == queue.Cancelled })
	c = h.container(id)
	if c.ReasonCode != queue.ReasonUnhealthy || c.Attempts != 2 || c.ExitCode == nil || *c.ExitCode != fake.ExitTerm {
		t.Fatalf("final: %s %q, %d attempts, exit %v; want Cancelled UNHEALTHY after 2 attempts, exit 143", c.ReasonCode, c.Reason, c.Attempts, c.ExitCode)
	}
	if c.Health == nil || c.Health.State != runner.HealthUnhealthy || c.Health.LastResult != "exit status 1" || c.Health.LastCheck.IsZero() {
		t.Fatalf("health %+v, want unhealthy with the last result", c.Health)
	}
	// What `ls containers -o json` shows: the API's container view.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"health_check":{"command":["false"],"interval":"5s","timeout":"5s","retries":2}`, `"health":{"state":"unhealthy","failures":2,`, `"reason_code":"UNHEALTHY"`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("container JSON lacks %s:\n%s", want, b)
		}
	}
	if n := h.cloud.StartCount(id); n != 2 {
		t.Fatalf("started %d times on %s and after, want 2", n, first)
	}
	if n := h.unhealthy.Load(); n != 2 {
		t.Fatalf("passes counted %d unhealthy ends, want 2 (dispatch_tui_containers_unhealthy_total)", n)
	}
}

func TestUnhealthyContainerWithoutRestartEndsCancelled(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	id := h.submit(-1, 0, healthCheck([]string{"false"}, 5*time.Second, 3), maxAttempts(3))
	h.runningOn(id, 30)
	h.until(id+" cancelled", 40, func() bool { return h.state(id) == queue.Cancelled })
	if c := h.container(id); c.ReasonCode != queue.ReasonUnhealthy || c.Attempts != 1 {
		t.Fatalf("%s %q after %d attempts; want UNHEALTHY after 1 (restart_policy never)", c.ReasonCode, c.Reason, c.Attempts)
	}
}

// A container whose health check passes is healthy and completes as usual.
func TestHealthyContainerCompletes(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	id := h.submit(30*time.Second, 0, healthCheck([]string{"true"}, 5*time.Second, 1), restartOnFailure)
	h.runningOn(id, 30)
	h.until(id+" healthy", 20, func() bool {
		hs := h.container(id).Health
		return hs != nil && hs.State == runner.HealthHealthy
	})
	h.until(id+" complete", 60, func() bool { return h.state(id) == queue.Complete })
	c := h.container(id)
	if *c.ExitCode != 0 || c.Attempts != 1 || c.Health.State != runner.HealthHealthy || c.Health.Failures != 0 {
		t.Fatalf("exit %d after %d attempts, health %+v", *c.ExitCode, c.Attempts, c.Health)
	}
	if ev := h.eventsOf(id); !strings.Contains(ev, "health healthy") {
		t.Fatalf("no healthy event: %s", ev)
	}
}

// A health check the runner would refuse is refused at submit, naming the
// field.
func TestHealthCheckValidatedAtSubmit(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	for _, tc := range []struct {
		hc    queue.HealthCheck
		field string
	}{
		{queue.HealthCheck{}, "health_check.command"},
		{queue.HealthCheck{Command: []string{""}}, "health_check.command[0]"},
		{queue.HealthCheck{Command: []string{"true"}, Interval: queue.Duration(-time.Second)}, "health_check.interval"},
		{queue.HealthCheck{Command: []string{"true"}, Interval: queue.Duration(time.Second), Timeout: queue.Duration(2 * time.Second)}, "health_check.timeout"},
		{queue.HealthCheck{Command: []string{"true"}, Retries: -1}, "health_check.retries"},
		{queue.HealthCheck{Command: []string{"a\x00b"}}, "health_check.command[0]"},
	} {
		hc := tc.hc
		_, err := h.eng.Submit(queue.Spec{Command: []string{"true"}, HealthCheck: &hc}, "test")
		var fe *queue.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("health_check %+v: %v, want a FieldError on %s", tc.hc, err, tc.field)
		}
	}
}
