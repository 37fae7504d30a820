//go:build linux

// A host's runner calls go to long-lived "runner serve" sessions, as on the
// other drivers' instances: not one SSH session and process start each.

package sshhosts

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
)

// TestRunnerCallsServedOnSSHHost runs the real engine and runner on one
// host of a real sshd: once containers have started and ended there, the
// host keeps a "runner serve" session open in its work dir (its lists,
// starts and forgets went there), and a second round of containers is
// served by that same session.
func TestRunnerCallsServedOnSSHHost(t *testing.T) {
	t.Parallel()
	requireSSHD(t)
	env := newSSHDEnv(t, 1)
	binPath, bin, hash := dispatchBinary(t)
	logger := testLogger(t)
	cfg, hosts := env.engineConfig(t)
	preinstallRunner(t, hosts, cfg.Cloud.RunnerPath+"~"+hash, binPath)
	cfg.Cloud.ProbeInterval = time.Second
	// Generous: a slow call on a busy machine must not read as a cut.
	cfg.Cloud.TimeoutRunnerCall = 30 * time.Second
	cfg.Cloud.TimeoutIdle = 10 * time.Minute // the host stays up between the rounds
	drv := newDriver(t, cfg, hosts, hash, "", logger)
	eng, err := engine.New(engine.Options{
		Config: cfg, InstanceSet: drv, Logger: logger, NewExecutor: drv.Executor,
		RunnerHash: hash, RunnerBinary: func() ([]byte, error) { return bin, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	wd := hosts[0].WorkDir
	// The serve sessions' shells: "cd WORK_DIR && … { RUNNER serve …".
	serves := func() []string {
		var out []string
		for _, p := range processesMentioning(wd) {
			if strings.Contains(p, " serve") {
				out = append(out, p)
			}
		}
		return out
	}
	seen := func() string {
		return fmt.Sprintf("\nprocesses in %s:\n%s\n%s", wd, strings.Join(processesMentioning(wd), "\n"), env.logs())
	}
	stepped := wait.With{Step: func() { eng.Step(); eng.Settle() }, Seen: seen}
	round := func(name string) {
		t.Helper()
		var ids []string
		for i := range 3 {
			c, err := eng.Submit(queue.Spec{
				Name: fmt.Sprintf("%s%d", name, i), Command: []string{"true"},
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
			}, "test")
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.ID)
		}
		stepped.Until(t, name+"'s containers Complete", 3*time.Minute, func() bool {
			for _, id := range ids {
				if c, ok := eng.Container(id); !ok || c.State != queue.Complete {
					return false
				}
			}
			return true
		})
	}

	round("first")
	first := serves()
	if len(first) == 0 {
		t.Fatalf("no runner serve session on the host after its containers ran: each runner call started a process of its own%s", seen())
	}
	round("second")
	for _, p := range first {
		if !contains(serves(), p) {
			t.Fatalf("the serve session %q ended between two rounds of containers; now: %q%s", p, serves(), seen())
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
