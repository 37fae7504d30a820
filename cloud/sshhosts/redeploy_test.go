//go:build linux

package sshhosts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// TestDeletedRunnerRedeployed deletes the runner binary on a host (as a
// temp cleaner would under /tmp) while two containers run there, with the
// real sshd, runner and engine. The next probe's "runner list" exits 127:
// the pool installs the runner again, without a restart and without
// showing the host unreachable, and reads the runner's records as usual:
// the container that exited meanwhile, and the one after it, end Complete
// 0 with their output, each having run once.
func TestDeletedRunnerRedeployed(t *testing.T) {
	t.Parallel()
	requireSSHD(t)
	env := newSSHDEnv(t, 1)
	_, bin, hash := dispatchBinary(t)
	logger := testLogger(t)
	cfg, hosts := env.engineConfig(t)
	cfg.Dispatcher.MaxContainersPerInstance = 2
	cfg.Cloud.ProbeInterval = time.Second
	// Generous: a slow call on a busy machine must not read as a cut.
	cfg.Cloud.TimeoutRunnerCall = 30 * time.Second
	cfg.Cloud.TimeoutIdle = 2 * time.Second
	drv := newDriver(t, cfg, hosts, hash, "", logger)
	eng, err := engine.New(engine.Options{
		Config: cfg, InstanceSet: drv, Logger: logger, NewExecutor: drv.Executor,
		RunnerHash: hash, RunnerBinary: func() ([]byte, error) { return bin, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	// The partition tests' container helpers, on a host with no network
	// of its own.
	pe := &partitionEnv{t: t, sshd: env, eng: eng, cfg: cfg,
		markers: filepath.Join(env.dir, "markers"), gates: filepath.Join(env.dir, "gates")}
	for _, d := range []string{pe.markers, pe.gates} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	names := []string{"d0", "d1"}
	ids := []string{pe.submit(names[0], 1), pe.submit(names[1], 1)}
	pe.until("both running on the host", 3*time.Minute, func() bool {
		return pe.reportedRunning(ids[0]) && pe.reportedRunning(ids[1])
	})
	host := pe.container(ids[0]).InstanceID
	runnerFile := filepath.Join(hosts[0].WorkDir, "dispatch-tui-runner~"+hash)
	if err := os.Remove(runnerFile); err != nil {
		t.Fatalf("deleting the runner: %v", err)
	}
	pe.open(names[0])

	notUnreachable := func() {
		if v, ok := eng.Instance(host); ok && !v.UnreachableSince.IsZero() {
			t.Fatalf("runner deleted: the host is shown unreachable:%s", pe.dump())
		}
	}
	// Its exit is announced by the runner watch, whose process outlives
	// its file: it may be collected before the next probe's list finds
	// the runner gone and installs it again.
	pe.until(names[0]+" collected and the runner installed again", 3*time.Minute, func() bool {
		notUnreachable()
		return pe.container(ids[0]).State.Final() && redeploys(eng, host) > 0
	})
	if _, err := os.Stat(runnerFile); err != nil {
		t.Fatalf("runner not installed again: %v", err)
	}
	if c := pe.container(ids[1]); c.State != queue.Running || c.InstanceID != host {
		t.Fatalf("%s is %s on %q, want still Running on %s:%s", names[1], c.State, c.InstanceID, host, pe.dump())
	}
	pe.open(names[1])
	pe.until(names[1]+" final", 3*time.Minute, func() bool {
		notUnreachable()
		return pe.container(ids[1]).State.Final()
	})
	for i, id := range ids {
		c := pe.container(id)
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 1 {
			t.Errorf("%s: %s exit %v attempts %d, want Complete, exit 0, one attempt", names[i], c.State, c.ExitCode, c.Attempts)
		}
		if n := pe.runs(names[i]); n != 1 {
			t.Errorf("%s's command ran %d times, want once", names[i], n)
		}
		if out, err := eng.Logs(context.Background(), id, 0); err != nil || !strings.Contains(string(out.Data), "hello from "+names[i]) {
			t.Errorf("%s: logs %q, %v; want its output", names[i], out.Data, err)
		}
	}
	evs, _ := eng.Events(0, 10000)
	for _, ev := range evs {
		if ev.Kind == worker.EventProbeError {
			t.Errorf("runner deleted: %s event %q", ev.Kind, ev.Reason)
		}
	}
	if n := redeploys(eng, host); n != 1 {
		t.Errorf("%d %s events saying the runner was installed again, want 1", n, worker.EventRunnerRedeploy)
	}
	if t.Failed() {
		t.Log(pe.dump())
	}
}

// redeploys counts the events saying the runner on host was installed
// again.
func redeploys(eng *engine.Engine, host string) int {
	evs, _ := eng.Events(0, 10000)
	n := 0
	for _, ev := range evs {
		if ev.Kind == worker.EventRunnerRedeploy && ev.Target == host && strings.Contains(ev.Reason, "installed again") {
			n++
		}
	}
	return n
}
