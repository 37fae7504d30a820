package fake

import (
	"context"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/runner/runnertest"
)

// The runner conformance suite against the in-memory runner: what other
// tests run against must behave as the real runner does.
func TestRunnerConformance(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) runnertest.Target {
		d := New(Options{Clock: clock.Real{}})
		inst, err := d.Create(context.Background(), cloud.InstanceType{Name: "t", ProviderType: "t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		exec, err := d.Executor(inst)
		if err != nil {
			t.Fatal(err)
		}
		return runnertest.Target{
			Client:  &runner.Client{Exec: exec, Path: "/opt/dispatch-tui"},
			Command: program,
			Lose:    func(*testing.T) { d.CrashRunner(inst.ID()) },
			Crash:   func(_ *testing.T, id string) { d.CrashContainer(inst.ID(), id) },
			Signal: func(_ *testing.T, st runner.Status, sig string) {
				d.SignalContainer(inst.ID(), st.ID, sig)
			},
		}
	})
}

// program renders p as a command the in-memory runner understands.
func program(p runnertest.Program) []string {
	switch {
	case p.Unrunnable:
		return []string{Unrunnable}
	case p.Forever && p.IgnoreTerm:
		return []string{"run-until-killed", IgnoreTerm}
	case p.Forever:
		return []string{"run-until-killed"}
	}
	if p.Output > 0 {
		return CmdOutput(0, p.Exit, p.Output)
	}
	return Cmd(0, p.Exit)
}
