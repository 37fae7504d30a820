//go:build linux

package ec2_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/worker"
)

// A leader's create that the pool sent while its lease was valid, and
// that the SDK would retry (a transient error) or the driver try again in
// the next subnet: the lease running out meanwhile, by the node's own
// clock, stops the later sends (docs/design.md §11). A retry would
// otherwise reach EC2 after another node took over.
func TestCreateSendsNothingOnceTheLeaseRanOut(t *testing.T) {
	for _, fault := range []struct {
		name  string
		apply func(*ec2test.Faults)
	}{
		{"a transient error, retried by the SDK", func(f *ec2test.Faults) { f.Errors = map[string]string{"RunInstances": "InternalError"} }},
		{"a full subnet, the next one tried", func(f *ec2test.Faults) { f.FullSubnets = map[string]bool{"subnet-a": true} }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			srv := ec2test.Start(t, ec2test.Options{})
			srv.Configure(fault.apply)
			opts := driverOptions(srv, newSigner(t))
			opts.MaxAttempts = ec2.DefaultMaxAttempts
			drv := newDriver(t, opts)
			cfg := config.Default()
			cfg.Dispatcher.StateDir = t.TempDir()
			cfg.InstanceTypes = []cloud.InstanceType{small}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			// The lease runs out right after the first send reached
			// the endpoint.
			var asked atomic.Int64
			p, err := worker.New(worker.Options{
				Config: cfg, InstanceSet: drv, NewExecutor: drv.Executor, Epoch: 1,
				MayAct: func() bool {
					asked.Add(1)
					return srv.Calls("RunInstances") == 0
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			if err := p.Create(small.Name); err != nil {
				t.Fatal(err)
			}
			seen := func() string {
				return fmt.Sprintf("\n  %d RunInstances, pool asked %d times, creating %d", srv.Calls("RunInstances"), asked.Load(), p.Stats().Creating)
			}
			wait.With{Seen: seen}.Until(t, "the create done", 30*time.Second, func() bool { return p.Stats().Creating == 0 })
			if n := srv.Calls("RunInstances"); n != 1 || len(srv.Live()) != 0 {
				t.Fatalf("RunInstances sent %d times (want the one sent while leading), %d instances live:%s", n, len(srv.Live()), seen())
			}
		})
	}
}
