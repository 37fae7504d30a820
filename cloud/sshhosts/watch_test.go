//go:build linux

// An exit on an sshhosts host is announced by its runner's watch, as on the
// other drivers' instances, not left for the next probe to find.

package sshhosts

import (
	"fmt"
	"testing"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
)

// TestExitAnnouncedOnSSHHost runs the real engine and runner on one host of
// a real sshd at the default probe_interval: once the host is up, its
// runner watch is ready through the driver's executor (in the host's
// work_dir), and a container's exit reaches the pool as a notice.
func TestExitAnnouncedOnSSHHost(t *testing.T) {
	t.Parallel()
	requireSSHD(t)
	env := newSSHDEnv(t, 1)
	_, bin, hash := dispatchBinary(t)
	logger := testLogger(t)
	cfg, hosts := env.engineConfig(t)
	cfg.Cloud.ProbeInterval = config.Default().Cloud.ProbeInterval
	// Generous: a slow call on a busy machine must not read as a cut.
	cfg.Cloud.TimeoutRunnerCall = 30 * time.Second
	cfg.Cloud.TimeoutIdle = 10 * time.Minute // the host stays up between the two containers
	drv := newDriver(t, cfg, hosts, hash, "", logger)
	eng, err := engine.New(engine.Options{
		Config: cfg, InstanceSet: drv, Logger: logger, NewExecutor: drv.Executor,
		RunnerHash: hash, RunnerBinary: func() ([]byte, error) { return bin, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	seen := func() string {
		s := eng.PoolStats()
		out := fmt.Sprintf("watching %d, exit notices %d, probes %d", s.Watching, s.ExitNotices, s.Probes)
		for _, v := range eng.Instances() {
			out += fmt.Sprintf("\n  instance %s %s containers=%v last_error=%q", v.ID, v.State, v.Containers, v.LastError)
		}
		return out + "\n" + env.logs()
	}
	stepped := wait.With{Step: func() { eng.Step(); eng.Settle() }, Seen: seen}
	run := func(name string) {
		t.Helper()
		c, err := eng.Submit(queue.Spec{
			Name: name, Command: []string{"sleep", "0.5"},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
		}, "test")
		if err != nil {
			t.Fatal(err)
		}
		stepped.Until(t, name+" Complete", 3*time.Minute, func() bool {
			got, ok := eng.Container(c.ID)
			return ok && got.State == queue.Complete
		})
	}

	run("warm-up") // the host claimed, the runner deployed, the first probes made
	stepped.Until(t, "the runner watch on the host ready", time.Minute, func() bool { return eng.PoolStats().Watching == 1 })
	before := eng.PoolStats().ExitNotices
	run("announced")
	if got := eng.PoolStats().ExitNotices - before; got < 1 {
		t.Fatalf("%d exit notices for the container that ended while the watch was ready, want 1: %s", got, seen())
	}
}
