//go:build linux

package ec2_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/queue"
)

// An instance EC2 ends during its launch leaves the listing with its
// StateReason as the pool's error kind: no capacity is a capacity error
// for its type, an unusable volume key a permanent error, a volume limit
// a quota error.
func TestLaunchFailureReason(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	srv.SetQuirks(func(q *ec2test.Quirks) {
		q.LaunchTerminations = []string{"Server.InsufficientInstanceCapacity", "Client.InternalError", "Client.VolumeLimitExceeded"}
	})
	for i, kind := range []string{"capacity", "permanent", "quota"} {
		inst, err := d.Create(ctx, small, tagsFor(small, fmt.Sprint("dies-", i)))
		if err != nil {
			t.Fatal(err)
		}
		list, err := d.Instances(ctx, nil)
		if err != nil || len(list) != 0 {
			t.Fatalf("listed %v, %v: want nothing (the instance ended)", ids(list), err)
		}
		why := cloud.LaunchFailed(inst)
		if cloud.ErrorKind(why) != kind || !strings.Contains(why.Error(), string(inst.ID())) {
			t.Fatalf("launch %d: LaunchFailed() = %v, want a %s error naming the instance", i, why, kind)
		}
		if ce, ok := cloud.AsCapacity(why); ok && ce.InstanceType != "t3.small" {
			t.Fatalf("capacity error for type %q, want t3.small", ce.InstanceType)
		}
	}
	ok, err := d.Create(ctx, small, tagsFor(small, "lives"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Instances(ctx, nil); err != nil || cloud.LaunchFailed(ok) != nil {
		t.Fatalf("a running instance: LaunchFailed() = %v, listing %v", cloud.LaunchFailed(ok), err)
	}
}

// The engine takes an instance EC2 ended during its launch for the failed
// create it is: an event names the instance and EC2's reason, the create
// counts as a capacity error, and the type is backed off (the containers'
// pending reason says so) instead of launched again and again.
func TestEngineLaunchFailure(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	srv.SetQuirks(func(q *ec2test.Quirks) { q.LaunchTerminations = []string{"Server.InsufficientInstanceCapacity"} })
	eng := engineOn(t, srv, nil)
	c, err := eng.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	named := func() bool {
		evs, _ := eng.Events(0, 1000)
		for _, ev := range evs {
			if s := fmt.Sprint(ev); strings.Contains(s, "Server.InsufficientInstanceCapacity") && strings.Contains(s, "i-") {
				return true
			}
		}
		return false
	}
	dump := func() string {
		got, _ := eng.Container(c.ID)
		var b strings.Builder
		fmt.Fprintf(&b, "\n  container %s on %q reason %q", got.State, got.InstanceID, got.Reason)
		for _, in := range srv.Instances() {
			fmt.Fprintf(&b, "\n  endpoint: %s %s %s %s", in.ID, in.Type, in.State, in.StateReason)
		}
		evs, _ := eng.Events(0, 1000)
		for _, ev := range evs {
			fmt.Fprintf(&b, "\n  event %+v", ev)
		}
		return b.String()
	}
	stepping(eng, dump).Until(t, "the launch failure named, or a second launch", 20*time.Second, func() bool {
		return named() || len(srv.Instances()) > 1
	})
	if !named() {
		t.Fatalf("no event names EC2's reason:%s", dump())
	}
	if n := eng.PoolStats().CloudOps["create"]["capacity"]; n != 1 {
		t.Fatalf("create errors of kind capacity: %d, want 1 (%v):%s", n, eng.PoolStats().CloudOps, dump())
	}
	// A few listings later: no second launch, and the container says why
	// it waits.
	syncs := srv.Calls("DescribeInstances")
	stepping(eng, dump).Until(t, "three more listings", 20*time.Second, func() bool {
		return srv.Calls("DescribeInstances") >= syncs+3
	})
	if got, _ := eng.Container(c.ID); len(srv.Instances()) != 1 || got.State.Final() || !strings.Contains(got.Reason, "no capacity") {
		t.Fatalf("after the launch failure: want one launch and the container waiting for capacity:%s", dump())
	}
}
