package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// TestLocalDeletedRunnerRedeployed deletes the runner binary (as a temp
// cleaner would) while containers run, on the local driver: real SSH,
// long-lived "runner serve" sessions and the real binary. The sessions
// started before the deletion stop at their next frame, the runner is
// installed again, the instance is never shown unreachable, and the
// containers running meanwhile and one submitted after the deletion end
// Complete with their output, one attempt each, without a restart.
func TestLocalDeletedRunnerRedeployed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := e2eConfig(dir)
	cfg.Dispatcher.MaxInstances = 1
	// Generous: a slow call on a busy machine must not read as a cut. The
	// redeploy (the 78 MB runner through the local driver's SSH under
	// -race) missed the fixed minute of an install at a load of 30: the
	// deadline scales with the load as the tests' waits do.
	cfg.Cloud.TimeoutRunnerCall = wait.Budget(time.Minute)
	r, _ := startEngine(t, cfg)
	gates := t.TempDir()
	submit := func(name string) string {
		t.Helper()
		c, err := r.Submit(queue.Spec{
			Name: name,
			Command: []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.05; done; echo "out of $2"`,
				"sh", filepath.Join(gates, name), name},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 64 << 20},
			MaxAttempts:        1,
		}, "test")
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	open := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(gates, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notUnreachable := func() {
		for _, v := range r.Instances() {
			if !v.UnreachableSince.IsZero() {
				t.Fatalf("runner deleted: instance %s shown unreachable: %s", v.ID, v.LastError)
			}
		}
	}

	ids := map[string]string{"a": submit("a"), "b": submit("b")}
	wait.Until(t, "a and b running", 2*time.Minute, func() bool { return pidOf(r.Engine, ids["a"]) > 0 && pidOf(r.Engine, ids["b"]) > 0 })
	runners, _ := filepath.Glob(cfg.Cloud.RunnerPath + "~*")
	if len(runners) != 1 {
		t.Fatalf("want one deployed runner, found %v", runners)
	}
	if err := os.Remove(runners[0]); err != nil {
		t.Fatal(err)
	}
	open("a")
	ids["c"] = submit("c") // started after the deletion
	wait.Until(t, "a and c final", 2*time.Minute, func() bool {
		notUnreachable()
		a, _ := r.Container(ids["a"])
		c, _ := r.Container(ids["c"])
		if c.State == queue.Running && pidOf(r.Engine, ids["c"]) > 0 {
			open("c")
		}
		return a.State.Final() && c.State.Final()
	})
	if _, err := os.Stat(runners[0]); err != nil {
		t.Fatalf("runner not installed again: %v", err)
	}
	open("b")
	wait.Until(t, "b final", 2*time.Minute, func() bool {
		notUnreachable()
		b, _ := r.Container(ids["b"])
		return b.State.Final()
	})
	for name, id := range ids {
		c, _ := r.Container(id)
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 1 {
			t.Errorf("%s: %s exit %v attempts %d reason %q, want Complete, exit 0, one attempt", name, c.State, c.ExitCode, c.Attempts, c.Reason)
		}
		if out, err := r.Logs(context.Background(), id, 0); err != nil || string(out.Data) != "out of "+name+"\n" {
			t.Errorf("%s: logs %q, %v; want its output", name, out.Data, err)
		}
	}
	evs, _ := r.Events(0, 10000)
	redeployed := false
	for _, ev := range evs {
		if ev.Kind == worker.EventRunnerRedeploy && strings.Contains(ev.Reason, "installed again") {
			redeployed = true
		}
	}
	if !redeployed {
		t.Errorf("no %s event says the runner was installed again", worker.EventRunnerRedeploy)
	}
}
