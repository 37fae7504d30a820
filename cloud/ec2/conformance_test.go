//go:build linux

package ec2_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/runner/agent"
	"dispatch-tui/engine/runner/runnertest"
)

// The runner conformance suite against the real agent on an instance of
// the endpoint, reached through the driver's executor as the dispatcher
// reaches it (user-data key, secret check, first host key pinned).
func TestRunnerConformance(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := ec2test.Start(t, ec2test.Options{})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	runnertest.Run(t, func(t *testing.T) runnertest.Target {
		inst, err := d.Create(context.Background(), small, tagsFor(small, "conformance"))
		if err != nil {
			t.Fatal(err)
		}
		var stateDir string
		for _, in := range srv.Instances() {
			if in.ID == string(inst.ID()) {
				stateDir = in.RunnerDir
			}
		}
		exec, err := d.Executor(inst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			exec.Close()
			if err := inst.Destroy(context.Background()); err != nil {
				t.Error(err)
			}
		})
		return runnertest.Target{
			Client:  &runner.Client{Exec: exec, Path: self},
			Command: shellProgram,
			Lose: func(t *testing.T) {
				agent.KillAll(stateDir)
				if err := os.RemoveAll(stateDir); err != nil {
					t.Fatal(err)
				}
			},
			Crash: func(t *testing.T, id string) { crash(t, filepath.Join(stateDir, id)) },
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
	})
}

// shellProgram renders p as a shell script.
func shellProgram(p runnertest.Program) []string {
	switch {
	case p.Unrunnable:
		return []string{"/nonexistent/dispatch-tui-test-command"}
	case p.Forever && p.IgnoreTerm:
		return []string{"sh", "-c", `trap "" TERM; echo ready; exec sleep 600`}
	case p.Forever:
		return []string{"sh", "-c", "echo ready; exec sleep 600"}
	}
	return []string{"sh", "-c", fmt.Sprintf("echo ready; echo exiting %d; exit %d", p.Exit, p.Exit)}
}

// crash kills the supervisor of the container in dir, then the command's
// process group. The pids come from pid_start: "<start ticks> <started>
// <supervisor pid> <supervisor start ticks> <pid>".
func crash(t *testing.T, dir string) {
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
	if err := syscall.Kill(spid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
