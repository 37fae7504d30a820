// The conformance suite's target for the real runner on this machine.

//go:build unix

package runnertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/runner/agent"
)

// AgentTarget is the Target of the real agent on an instance whose
// processes run on this machine (the local driver's, an EC2 test
// endpoint's), reached through client; stateDir is the agent's state
// directory on this machine.
func AgentTarget(client *runner.Client, stateDir string) Target {
	return Target{
		Client:  client,
		Command: ShellProgram,
		Lose: func(t *testing.T) {
			agent.KillAll(stateDir)
			if err := os.RemoveAll(stateDir); err != nil {
				t.Fatal(err)
			}
		},
		Crash: func(t *testing.T, id string) { crashSupervisor(t, filepath.Join(stateDir, id)) },
		Signal: func(t *testing.T, st runner.Status, sig string) {
			s := syscall.SIGTERM
			if sig == runner.SignalKill {
				s = syscall.SIGKILL
			}
			if err := syscall.Kill(st.PID, s); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// ShellProgram renders p as a shell script.
func ShellProgram(p Program) []string {
	switch {
	case p.Unrunnable:
		return []string{"/nonexistent/dispatch-tui-test-command"}
	case p.Forever && p.IgnoreTerm:
		return []string{"sh", "-c", `trap "" TERM; echo ready; exec sleep 600`}
	case p.Forever:
		return []string{"sh", "-c", "echo ready; exec sleep 600"}
	}
	fill := ""
	if p.Output > 0 {
		fill = fmt.Sprintf("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c %d; echo; ", p.Output)
	}
	return []string{"sh", "-c", fmt.Sprintf("echo ready; %secho exiting %d; exit %d", fill, p.Exit, p.Exit)}
}

// crashSupervisor kills the supervisor of the container in dir, then the
// command's process group. The pids come from pid_start: "<start ticks>
// <started> <supervisor pid> <supervisor start ticks> <pid>".
func crashSupervisor(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "pid_start"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		t.Fatalf("pid_start %q", b)
	}
	spid, err1 := strconv.Atoi(f[2])
	pid, err2 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil || spid <= 1 || pid <= 1 {
		t.Fatalf("pid_start %q", b)
	}
	// SIGKILL marks the supervisor dead before kill(2) returns: it records
	// nothing of what happens next.
	if err := syscall.Kill(spid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
