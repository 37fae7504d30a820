//go:build linux

package ec2_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/enginetest/wait"
)

// Right after a launch EC2 may answer InvalidInstanceID.NotFound for an
// instance that runs: a destroy then fails, to be tried again, instead of
// taking the instance for gone and leaving it running; once EC2 knows it,
// the destroy terminates it. Past the grace period NotFound means gone.
func TestDestroyRightAfterCreate(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	clk := newFakeClock()
	opts := driverOptions(srv, newSigner(t))
	opts.Now = clk.Now
	d := newDriver(t, opts)
	srv.SetQuirks(func(q *ec2test.Quirks) { q.IDLag = true })
	srv.Configure(func(f *ec2test.Faults) { f.ListDelay = 500 * time.Millisecond })
	inst, err := d.Create(ctx, small, tagsFor(small, "lag"))
	if err != nil {
		t.Fatal(err)
	}
	err = inst.Destroy(ctx)
	if err == nil {
		t.Fatalf("destroy while EC2 does not know the instance returned nil; live at the endpoint: %v", srv.Live())
	}
	if cloud.ErrorKind(err) != "other" || !strings.Contains(err.Error(), "InvalidInstanceID.NotFound") {
		t.Fatalf("destroy while EC2 does not know the instance: %v, want a transient error naming the code", err)
	}
	if list, err := d.Instances(ctx, nil); err != nil || !slices.Equal(ids(list), []string{string(inst.ID())}) {
		t.Fatalf("after the failed destroy the instance is still to be listed: %v, %v", ids(list), err)
	}
	seen := func() string { return fmt.Sprint(err) }
	wait.With{Seen: seen}.Until(t, "a destroy that succeeds once EC2 knows the instance", 30*time.Second, func() bool {
		if err != nil {
			err = inst.Destroy(ctx)
		}
		return err == nil
	})
	if live := srv.Live(); len(live) != 0 {
		t.Fatalf("live at the endpoint after the destroy: %v", live)
	}

	// Past the grace period EC2 has had time to know it: NotFound is gone.
	srv.Configure(func(f *ec2test.Faults) { f.ListDelay = time.Hour })
	old, err := d.Create(ctx, small, tagsFor(small, "old"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(ec2.DefaultListGrace)
	if err := old.Destroy(ctx); err != nil {
		t.Fatalf("destroy past the grace period: %v", err)
	}
}

// After a destroy the instance is in the state EC2 answered: shutting
// down, or terminated when it already was.
func TestDestroyKeepsEC2sAnswer(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	inst, err := d.Create(ctx, small, tagsFor(small, "twice"))
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if st := inst.(*ec2.Instance).State(); st != "shutting-down" {
		t.Fatalf("state after a destroy %q, want shutting-down", st)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if st := inst.(*ec2.Instance).State(); st != "terminated" {
		t.Fatalf("state after destroying a terminated instance %q, want terminated", st)
	}
}
