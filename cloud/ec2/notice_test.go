//go:build linux

package ec2_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/enginetest/wait"
)

// EC2 reclaims a spot instance through shutting-down, with the spot
// termination as its StateReason, before it is terminated: a listing in
// between reports the interruption.
func TestInterruptedFromTheListing(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{ShutdownTime: time.Hour})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	sp, err := d.Create(ctx, spot, tagsFor(spot, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Interrupt(string(sp.ID())); err != nil {
		t.Fatal(err)
	}
	list, err := d.Instances(ctx, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("listed %v %v, want the instance shutting down", ids(list), err)
	}
	inst := list[0].(*ec2.Instance)
	why, ok := cloud.Interrupted(inst)
	if inst.State() != "shutting-down" || !ok || !strings.Contains(why, "Server.SpotInstanceTermination") {
		t.Fatalf("listed %s in state %q: Interrupted() = %q, %v; want the spot termination", inst.ID(), inst.State(), why, ok)
	}
}

// The two-minute notice: the command a spot instance's probes run reads
// it from the instance's metadata service with an IMDSv2 token, and prints
// nothing until EC2 posts it; an on-demand instance has no command.
func TestSpotNoticeRead(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	srv.Configure(func(f *ec2test.Faults) { f.SpotNotice = time.Hour })
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	od, err := d.Create(ctx, small, tagsFor(small, "od"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := d.Create(ctx, spot, tagsFor(spot, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if cmd := od.(cloud.NoticeReader).NoticeCommand(); cmd != "" {
		t.Errorf("on-demand instance's notice command %q, want none", cmd)
	}
	nr := sp.(cloud.NoticeReader)
	cmd := nr.NoticeCommand()
	if cmd == "" {
		t.Fatal("spot instance has no notice command")
	}
	waitListed(t, d, sp.ID())
	x, err := d.Executor(sp)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	read := func() []byte {
		t.Helper()
		var out []byte
		var err error
		seen := func() string { return fmt.Sprint(err) }
		wait.With{Seen: seen}.Until(t, "the notice command to run", 30*time.Second, func() bool {
			out, _, err = x.Execute(ctx, cmd, nil)
			return err == nil
		})
		return out
	}
	if out := read(); len(out) != 0 {
		t.Fatalf("notice before any was posted: %q", out)
	}
	if _, _, ok := nr.ParseNotice(nil); ok {
		t.Fatal("ParseNotice(nothing) reports a notice")
	}
	if err := srv.Interrupt(string(sp.ID())); err != nil {
		t.Fatal(err)
	}
	out := read()
	why, at, ok := nr.ParseNotice(out)
	if !ok || !strings.Contains(why, "terminate") || time.Until(at) < 50*time.Minute {
		t.Fatalf("after the notice: read %q: %q at %s, %v; want terminate in an hour", out, why, at, ok)
	}
	for _, in := range srv.Instances() {
		if in.ID == string(sp.ID()) && in.State != "running" {
			t.Errorf("spot instance %s after its notice: %s, want still running", in.ID, in.State)
		}
		if in.ID == string(od.ID()) && in.NoticeReads != 0 {
			t.Errorf("on-demand instance's notice read %d times", in.NoticeReads)
		}
	}
}

// waitListed lists until id shows with an address.
func waitListed(t *testing.T, d *ec2.Driver, id cloud.InstanceID) {
	t.Helper()
	var list []cloud.Instance
	var err error
	seen := func() string { return fmt.Sprint("listed ", ids(list), " ", err) }
	wait.With{Seen: seen}.Until(t, string(id)+" listed with an address", 30*time.Second, func() bool {
		list, err = d.Instances(context.Background(), nil)
		for _, in := range list {
			if in.ID() == id && in.Address() != "" {
				return true
			}
		}
		return false
	})
}
