package scheduler

import (
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// A container its runner lists lost (its supervisor gone with no exit
// recorded, as when the host reboots) did not end by itself: it is
// requeued with its attempt counted and the runner's reason, whatever its
// restart policy, and with no attempts left it ends Cancelled with that
// reason; never Complete with exit -1. Its exited attempt is forgotten
// before the next one may start.
func TestLostContainerRequeuedNotCompleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxAttempts int
		policy      string
		lost        string
	}{
		{"rebooted, attempts left", 3, queue.RestartNever, runner.LostRebooted},
		{"runner killed, attempts left, on-failure", 2, queue.RestartOnFailure, runner.LostKilled},
		{"rebooted, no attempts left", 1, queue.RestartNever, runner.LostRebooted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			q := openTestQueue(t, clk)
			cfg := config.Default()
			cfg.InstanceTypes = benchTypes
			c, err := q.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30},
				MaxAttempts: tc.maxAttempts, RestartPolicy: tc.policy}, "test")
			if err != nil {
				t.Fatal(err)
			}
			typ, started := benchTypes[0], clk.Now()
			pool := &forgetPool{staticPool: staticPool{quota: 1, views: []worker.InstanceView{{
				Instance: view.Instance{
					ID:           "i-1",
					Type:         typ.Name,
					ProviderType: typ.ProviderType,
					State:        worker.StateRunning,
					IdleBehavior: worker.IdleRun,
					Containers:   []string{c.ID},
				},
				ListedAt: started,
				Reported: []runner.Status{{ID: c.ID, PID: 7, State: runner.StateRunning, StartedAt: started}},
			}}}}
			s := New(cfg, q, pool, clk, nil)
			s.RunPass()
			if got, _ := q.Get(c.ID); got.State != queue.Running || got.Attempts != 1 {
				t.Fatalf("after the first pass: %s, attempts %d; want Running, attempt 1", got.State, got.Attempts)
			}

			clk.Advance(time.Minute)
			v := &pool.views[0]
			v.ListedAt, v.Containers = clk.Now(), nil
			v.Reported = []runner.Status{{ID: c.ID, PID: 7, State: runner.StateExited, ExitCode: -1, StartedAt: started, Lost: tc.lost}}
			s.RunPass()

			got, _ := q.Get(c.ID)
			if got.ExitCode != nil || got.State == queue.Complete || got.State == queue.Running {
				t.Fatalf("a lost attempt: %s exit %v reason %q; want requeued or cancelled, no exit code", got.State, exitCode(got), got.Reason)
			}
			// The move's event carries the reason (a Queued record's
			// reason says next what it waits for).
			evs, err := q.Events(0, 100)
			if err != nil {
				t.Fatal(err)
			}
			said := false
			for _, ev := range evs {
				if ev.Target == c.ID && ev.Action == string(got.State) {
					said = strings.Contains(ev.Reason, "lost on i-1: "+tc.lost)
				}
			}
			if !said {
				t.Fatalf("no %s event saying %q on i-1: %+v", got.State, tc.lost, evs)
			}
			if got.Attempts != 1 {
				t.Fatalf("attempts %d, want 1 counted (not reverted)", got.Attempts)
			}
			if tc.maxAttempts == 1 {
				if got.State != queue.Cancelled || got.ReasonCode != queue.ReasonMaxAttempts || !strings.Contains(got.Reason, tc.lost) {
					t.Fatalf("no attempts left: %s %s %q; want Cancelled %s", got.State, got.ReasonCode, got.Reason, queue.ReasonMaxAttempts)
				}
			} else if got.State != queue.Queued {
				t.Fatalf("attempts left: %s %s %q; want Queued", got.State, got.ReasonCode, got.Reason)
			}
			if len(pool.forgot) != 1 || pool.forgot[0] != c.ID {
				t.Fatalf("forgets %v, want the lost attempt's %s", pool.forgot, c.ID)
			}
		})
	}
}

func exitCode(c view.Container) any {
	if c.ExitCode == nil {
		return nil
	}
	return *c.ExitCode
}
