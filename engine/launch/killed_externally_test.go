package launch

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// A user's kill(1) of a container's process (its pid as the runner lists
// it) is no completion: the container runs again, attempt 2, and once its
// attempts are used up it ends Cancelled KILLED_EXTERNALLY, never Complete
// with exit 143. The command's own "exit 143" does complete.
func TestLocalContainerKilledFromOutside(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(t.TempDir())
	r, _ := startEngine(t, cfg)
	submit := func(script string, attempts int) string {
		t.Helper()
		c, err := r.Submit(queue.Spec{
			Command:            []string{"sh", "-c", script},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 64 << 20},
			MaxAttempts:        attempts,
		}, "test")
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	victim := submit("exec sleep 600", 2)
	selfExit := submit("exit 143", 1)

	for n := 1; n <= 2; n++ {
		if err := syscall.Kill(runningPID(t, r, victim, n), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	wait.Until(t, "the victim final", time.Minute, func() bool {
		c, _ := r.Container(victim)
		return c.State.Final()
	})
	c, _ := r.Container(victim)
	if c.State != queue.Cancelled || c.ReasonCode != queue.ReasonKilledExternally || c.Attempts != 2 ||
		!strings.Contains(c.Reason, "killed by signal TERM from outside the dispatcher") {
		t.Fatalf("victim: %s %s %q attempts=%d; want Cancelled KILLED_EXTERNALLY after 2 attempts", c.State, c.ReasonCode, c.Reason, c.Attempts)
	}
	wait.Until(t, "the self-exiting container final", time.Minute, func() bool {
		c, _ := r.Container(selfExit)
		return c.State.Final()
	})
	if c, _ := r.Container(selfExit); c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 143 {
		t.Fatalf("a command exiting 143 by itself: %s %v %q, want Complete exit 143", c.State, c.ExitCode, c.Reason)
	}
}

// runningPID waits until container id runs its attempt n, as the
// dispatcher has seen its runner list it, and returns its pid as its
// runner lists it.
func runningPID(t *testing.T, r *Running, id string, n int) int {
	t.Helper()
	var p int
	var seen string // what the last look found, said if the wait fails
	events := func() string {
		evs, _ := r.Events(0, 1<<20)
		var b strings.Builder
		for _, e := range evs {
			if e.Target == id || strings.Contains(e.Reason, id) {
				fmt.Fprintf(&b, "\n  %s %s %s: %s", e.Time.Format("15:04:05.000"), e.Actor, e.Action, e.Reason)
			}
		}
		return b.String()
	}
	wait.With{Seen: func() string { return seen + "; its events:" + events() }}.Until(t, "container "+id+" running its attempt "+strconv.Itoa(n), time.Minute, func() bool {
		c, _ := r.Container(id)
		seen = fmt.Sprintf("container %s attempts=%d on %q reason %s %q", c.State, c.Attempts, c.InstanceID, c.ReasonCode, c.Reason)
		if c.State != queue.Running || c.Attempts != n || !c.RunnerSeen {
			return false
		}
		st, listed := runnerStatus(r.Engine, c.InstanceID, id)
		seen += fmt.Sprintf("; its runner lists %+v (listed %v)", st, listed)
		if listed && st.State == runner.StateRunning && st.PID > 1 {
			p = st.PID
			return true
		}
		return false
	})
	return p
}
