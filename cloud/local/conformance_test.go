//go:build unix

package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/runner/agent"
	"dispatch-tui/engine/runner/runnertest"
	"dispatch-tui/engine/sshexec"
)

// TestMain lets the test binary be the runner on the instances: a session
// running "<test binary> runner <verb>" runs the agent, as
// "dispatch-tui runner <verb>" does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		os.Exit(agent.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, agent.Env{Version: "0.0.0-test", Hash: "testhash"}))
	}
	os.Exit(m.Run())
}

// The runner conformance suite against the real agent, reached over SSH
// on an instance of this driver as the dispatcher reaches it.
func TestRunnerConformance(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runnertest.Run(t, func(t *testing.T) runnertest.Target {
		d := newDriver(t, t.TempDir(), 0)
		inst := create(t, d, nil)
		hk, _ := d.HostKey(inst.ID())
		exec := sshexec.New(sshexec.Options{
			Address: inst.Address(), User: "dispatch", Signer: d.ClientSigner(),
			HostKeyCallback: sshexec.Pinned(hk),
		})
		stateDir := filepath.Join(inst.(*Instance).Dir(), dirRunner)
		t.Cleanup(func() {
			exec.Close()
			if err := inst.Destroy(context.Background()); err != nil {
				t.Error(err)
			}
		})
		return runnertest.AgentTarget(&runner.Client{Exec: exec, Path: self}, stateDir)
	})
}
