package launch

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// Every process of a container killed with SIGKILL, its supervisor first
// (what a host reboot or an OOM kill of the runner does), on the local
// driver's real runner: no exit is recorded, so the container is not
// Complete with exit -1. It runs again, attempt 2, and when that one is
// lost too it ends Cancelled saying the supervisor is gone.
func TestLocalContainerLostWithItsSupervisor(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(t.TempDir())
	r, _ := startEngine(t, cfg)
	c, err := r.Submit(queue.Spec{
		Command:            []string{"sh", "-c", "exec sleep 600"},
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 64 << 20},
		MaxAttempts:        2,
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	victim := c.ID

	for n := 1; n <= 2; n++ {
		p := runningPID(t, r, victim, n)
		// The command's parent is its supervisor (it forked it).
		sup := parentPID(t, p)
		if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
			t.Fatalf("supervisor %d of pid %d: %v", sup, p, err)
		}
		if err := syscall.Kill(-p, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	wait.Until(t, "the victim final", time.Minute, func() bool {
		c, _ := r.Container(victim)
		return c.State.Final()
	})
	c, _ = r.Container(victim)
	if c.State != queue.Cancelled || c.ReasonCode != queue.ReasonMaxAttempts || c.ExitCode != nil || c.Attempts != 2 ||
		!strings.Contains(c.Reason, runner.LostKilled) {
		t.Fatalf("victim: %s %s %q exit=%v attempts=%d; want Cancelled %s after 2 attempts saying %q, no exit code",
			c.State, c.ReasonCode, c.Reason, c.ExitCode, c.Attempts, queue.ReasonMaxAttempts, runner.LostKilled)
	}
}

// parentPID is field 4 of /proc/<pid>/stat.
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil || ppid <= 1 {
		t.Fatalf("/proc/%d/stat: parent %q", pid, f[1])
	}
	return ppid
}
