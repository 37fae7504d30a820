//go:build linux

package ec2_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/runner"
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
		inst, err := d.Create(context.Background(), small, tagsFor(small, fmt.Sprintf("conformance-%x", sha256.Sum256([]byte(t.Name())))))
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
		return runnertest.AgentTarget(&runner.Client{Exec: exec, Path: self}, stateDir)
	})
}
