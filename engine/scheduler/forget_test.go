package scheduler

import (
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// forgetPool is a staticPool that records the forgets asked of it.
type forgetPool struct {
	staticPool
	forgot []string
}

func (p *forgetPool) ForgetContainer(_ cloud.InstanceID, id string) { p.forgot = append(p.forgot, id) }

// A runner is told to forget an exited container only once the store has
// its final state: if the write fails, the store still has it running, and
// a runner that forgot it would get it run again after a restart.
func TestForgetOnlyOnceTheExitIsWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		failWrite  bool
		wantForgot int
	}{
		{"written", false, 1},
		{"write fails", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk, q, cfg, c := oneContainer(t)
			typ := benchTypes[0]
			pool := &forgetPool{staticPool: staticPool{quota: 1, views: []worker.InstanceView{{
				Instance: view.Instance{
					ID:           "i-1",
					Type:         typ.Name,
					ProviderType: typ.ProviderType,
					State:        worker.StateRunning,
					IdleBehavior: worker.IdleRun,
				},
				ListedAt: clk.Now(),
				Reported: []runner.Status{{ID: c.ID, PID: 7, State: runner.StateExited, StartedAt: clk.Now().Add(-time.Second), FinishedAt: clk.Now()}},
			}}}}
			s := New(cfg, q, pool, clk, nil)
			if tc.failWrite {
				q.Close() // every write fails from now on
			}
			s.RunPass()
			if len(pool.forgot) != tc.wantForgot {
				t.Fatalf("forgets %v, want %d", pool.forgot, tc.wantForgot)
			}
			if got, _ := q.Get(c.ID); got.State != queue.Complete {
				t.Fatalf("container %s, want Complete (in memory)", got.State)
			}
		})
	}
}
