//go:build linux

package ec2_test

import (
	"context"
	"strings"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2/ec2test"
)

// A subnet out of addresses, whether EC2 says so by its code or only in
// the message of an InvalidParameterValue, and an AZ out of volume
// capacity, move the create to the next subnet; when every subnet says
// so, it is a capacity error for the whole provider, not a refusal.
func TestSubnetSpecificErrors(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	srv.SetQuirks(func(q *ec2test.Quirks) { q.SubnetFullByMessage = true })

	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = map[string]bool{"subnet-a": true} })
	if _, err := d.Create(ctx, small, tagsFor(small, "full-1")); err != nil {
		t.Fatalf("subnet-a full (by message): %v", err)
	}
	if in := srv.Instances(); len(in) != 1 || in[0].Subnet != "subnet-b" {
		t.Fatalf("instances %+v, want one in subnet-b", in)
	}
	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = map[string]bool{"subnet-a": true, "subnet-b": true} })
	_, err := d.Create(ctx, small, tagsFor(small, "full-2"))
	if ce, ok := cloud.AsCapacity(err); !ok || ce.InstanceType != "" || !strings.Contains(err.Error(), "free Ipv4 addresses") {
		t.Fatalf("every subnet full (by message): %v, want a provider-wide capacity error quoting EC2", err)
	}
	srv.Configure(func(f *ec2test.Faults) { *f = ec2test.Faults{} })

	before := srv.Calls("RunInstances")
	srv.Configure(func(f *ec2test.Faults) { f.Errors = map[string]string{"RunInstances": "InsufficientVolumeCapacity"} })
	_, err = d.Create(ctx, small, tagsFor(small, "vol"))
	if ce, ok := cloud.AsCapacity(err); !ok || ce.InstanceType != "" {
		t.Fatalf("no volume capacity: %v, want a provider-wide capacity error", err)
	}
	if n := srv.Calls("RunInstances") - before; n != 2 {
		t.Fatalf("no volume capacity: %d RunInstances, want one per subnet", n)
	}
}

// The error table: a code with a dotted suffix it does not list is taken
// by its prefix (a missing spot service-linked role is an AuthFailure,
// permanent, saying what to do), and Unsupported is a capacity error for
// the type only when EC2's message names the type.
func TestErrorCodePrefixesAndUnsupported(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	opts := driverOptions(srv, newSigner(t))
	opts.MaxAttempts = 3
	d := newDriver(t, opts)

	before := srv.Calls("RunInstances")
	srv.Configure(func(f *ec2test.Faults) {
		f.Errors = map[string]string{"RunInstances": "AuthFailure.ServiceLinkedRoleCreationNotPermitted"}
		f.ErrorMessage = "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances."
	})
	_, err := d.Create(ctx, spot, tagsFor(spot, "slr"))
	if !cloud.IsPermanent(err) || !strings.Contains(err.Error(), "create-service-linked-role") {
		t.Fatalf("spot without its service-linked role: %v, want a permanent error saying how to create the role", err)
	}
	if n := srv.Calls("RunInstances") - before; n != 1 {
		t.Fatalf("spot without its service-linked role: %d RunInstances, want 1 (not retried)", n)
	}

	srv.Configure(func(f *ec2test.Faults) {
		f.Errors = map[string]string{"RunInstances": "Unsupported"}
		f.ErrorMessage = "Your requested instance type (t3.small) is not supported in your requested Availability Zone (us-test-1a)."
	})
	_, err = d.Create(ctx, small, tagsFor(small, "unsup-1"))
	if ce, ok := cloud.AsCapacity(err); !ok || ce.InstanceType != "t3.small" {
		t.Fatalf("Unsupported naming the type: %v, want a capacity error for t3.small", err)
	}
	srv.Configure(func(f *ec2test.Faults) {
		f.ErrorMessage = "The requested configuration is currently not supported. Please check the documentation for supported configurations."
	})
	_, err = d.Create(ctx, small, tagsFor(small, "unsup-2"))
	if !cloud.IsPermanent(err) {
		t.Fatalf("Unsupported not naming the type: %v, want a permanent error", err)
	}
}
