//go:build linux

package ec2_test

import (
	"context"
	"strings"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2/ec2test"
)

// Each subnet tried gets its own client token, and a create repeated with
// the same tags (the pool's retry of a create whose answer was lost) is
// the instance the first one made, not a second one; the same tags for
// another request are refused. Both ways of placing an instance: by its
// subnet (private addresses) and by its network interface (public ones).
func TestClientTokens(t *testing.T) {
	for _, private := range []bool{true, false} {
		t.Run(map[bool]string{true: "private", false: "public"}[private], func(t *testing.T) {
			clientTokens(t, private)
		})
	}
}

func clientTokens(t *testing.T, private bool) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	opts := driverOptions(srv, newSigner(t))
	opts.UsePrivateIP = private
	d := newDriver(t, opts)

	// Failover: subnet-a is full, the same create goes to subnet-b.
	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = map[string]bool{"subnet-a": true} })
	inst, err := d.Create(ctx, small, tagsFor(small, "tok-1"))
	if err != nil {
		t.Fatalf("create failing over from a full subnet: %v", err)
	}
	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = nil })

	// The answer lost: the instance exists, the caller cannot know.
	srv.Configure(func(f *ec2test.Faults) { f.LostLaunchResponses = 1 })
	if _, err := d.Create(ctx, small, tagsFor(small, "tok-2")); cloud.ErrorKind(err) != "other" {
		t.Fatalf("create whose answer was lost: %v, want an error of kind other", err)
	}
	if n := len(srv.Live()); n != 2 {
		t.Fatalf("%d live instances after the lost answer, want 2", n)
	}
	again, err := d.Create(ctx, small, tagsFor(small, "tok-2"))
	if err != nil {
		t.Fatalf("retry of the create whose answer was lost: %v", err)
	}
	if live := srv.Live(); len(live) != 2 || string(again.ID()) != live[1] {
		t.Fatalf("retry made %s; live %v: want the instance the lost create made", again.ID(), live)
	}
	if other, err := d.Create(ctx, small, tagsFor(small, "tok-1")); err != nil || other.ID() != inst.ID() {
		t.Fatalf("the first create repeated: %v, %v; want %s again", other, err, inst.ID())
	}

	// The same secret for another request: refused, a permanent error
	// naming the code.
	_, err = d.Create(ctx, large, tagsFor(small, "tok-2"))
	if !cloud.IsPermanent(err) || !strings.Contains(err.Error(), "IdempotentParameterMismatch") {
		t.Fatalf("same token, other parameters: %v", err)
	}
	if n := len(srv.Live()); n != 2 {
		t.Fatalf("%d live instances at the end, want 2", n)
	}
}
