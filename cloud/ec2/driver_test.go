//go:build linux

package ec2_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/enginetest/wait"
)

// A create, a listing, tag changes, a command through the executor and a
// destroy, all through the SDK against the endpoint.
func TestCreateListTagDestroy(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	signer := newSigner(t)
	opts := driverOptions(srv, signer)
	opts.Tags = map[string]string{"team": "genomics", "Name": "dispatch-tui worker"}
	opts.RootVolumeSize = 30 << 30
	opts.IAMInstanceProfile = "dispatch-worker"
	opts.AdminUser = "crunch"
	d := newDriver(t, opts)

	inst, err := d.Create(ctx, small, tagsFor(small, "s3cr3t"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.ProviderType() != "t3.small" || inst.Tags()[cloud.TagSecret] != "s3cr3t" {
		t.Fatalf("created %s with tags %v", inst, inst.Tags())
	}
	got := srv.Instances()
	if len(got) != 1 {
		t.Fatalf("server has %d instances", len(got))
	}
	si := got[0]
	if si.KeyName != "" || len(srv.KeyPairs()) != 0 {
		t.Errorf("key pair %q (server has %v), want none: user-data authorizes the key", si.KeyName, srv.KeyPairs())
	}
	if si.UserDataUser != "crunch" || si.Secret != "s3cr3t" ||
		si.Authorized != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) {
		t.Errorf("user-data gave user %q secret %q key %q", si.UserDataUser, si.Secret, si.Authorized)
	}
	if si.Tags["team"] != "genomics" || si.Tags[cloud.TagOwner] != "dispatcher-1" {
		t.Errorf("server tags %v", si.Tags)
	}
	if si.BlockDevices[ec2test.RootDevice] != 30 || si.BlockDevices[ec2.DefaultScratchDevice] != 20 {
		t.Errorf("block devices %v, want root 30 GiB and scratch 20 GiB", si.BlockDevices)
	}
	if si.IAMProfile != "dispatch-worker" || !si.IMDSv2 || si.Spot || si.Subnet != "subnet-a" {
		t.Errorf("iam %q imdsv2 %v spot %v subnet %q", si.IAMProfile, si.IMDSv2, si.Spot, si.Subnet)
	}

	list, err := d.Instances(ctx, cloud.Tags{cloud.TagOwner: "dispatcher-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(list), []string{si.ID}) || list[0].Address() != si.Address {
		t.Fatalf("listed %v at %q, want %s at %s", ids(list), list[0].Address(), si.ID, si.Address)
	}
	if other, err := d.Instances(ctx, cloud.Tags{cloud.TagOwner: "someone-else"}); err != nil || len(other) != 0 {
		t.Fatalf("other owner's listing: %v, %v", ids(other), err)
	}

	// The executor reaches the instance as the admin user with the
	// dispatcher's key and passes the secret check.
	x, err := d.Executor(list[0])
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	out, _, err := x.Execute(ctx, "cat .dispatch-tui-secret; echo ok", nil)
	if err != nil || string(out) != "s3cr3t\nok\n" {
		t.Fatalf("execute: %q, %v", out, err)
	}

	// SetTags replaces: changed and removed keys show at the provider,
	// the configured extra tags stay.
	tags := list[0].Tags()
	tags[cloud.TagIdleBehavior] = "hold"
	delete(tags, "Name")
	tags["extra"] = "1"
	if err := list[0].SetTags(ctx, tags); err != nil {
		t.Fatal(err)
	}
	st := srv.Instances()[0].Tags
	if st[cloud.TagIdleBehavior] != "hold" || st["extra"] != "1" || st["team"] != "genomics" || st["Name"] != "dispatch-tui worker" {
		t.Errorf("tags after SetTags %v", st)
	}
	// Only the dispatcher's own tags are deleted: one an operator (or a
	// tag policy) set stays, as does any other key the dispatcher no
	// longer passes.
	srv.TagInstance(si.ID, "CostCenter", "42")
	if list, err = d.Instances(ctx, nil); err != nil || list[0].Tags()["CostCenter"] != "42" {
		t.Fatalf("listing after an operator's tag: %v, %v", list, err)
	}
	tags = list[0].Tags()
	delete(tags, "extra")
	delete(tags, "CostCenter")
	delete(tags, cloud.TagIdleBehavior)
	if err := list[0].SetTags(ctx, tags); err != nil {
		t.Fatal(err)
	}
	st = srv.Instances()[0].Tags
	if _, ok := st[cloud.TagIdleBehavior]; ok {
		t.Errorf("removed dispatcher tag still at the provider: %v", st)
	}
	if st["CostCenter"] != "42" || st["extra"] != "1" {
		t.Errorf("SetTags deleted tags it did not set: %v", st)
	}
	// The secret is an instance tag only, never a volume's.
	if vt := srv.Instances()[0].VolumeTags; vt[cloud.TagOwner] != "dispatcher-1" || vt[cloud.TagSecret] != "" {
		t.Errorf("volume tags %v: want the owner, not the secret", vt)
	}
	list, _ = d.Instances(ctx, nil)
	if _, ok := list[0].Tags()[cloud.TagIdleBehavior]; ok || list[0].Tags()["CostCenter"] != "42" {
		t.Errorf("listed tags %v", list[0].Tags())
	}

	// Destroy terminates; terminated instances are not listed; a second
	// destroy is no error.
	if err := list[0].Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if st := srv.Instances()[0].State; st != "terminated" {
		t.Fatalf("state after destroy %q", st)
	}
	if list, err := d.Instances(ctx, nil); err != nil || len(list) != 0 {
		t.Fatalf("listed after destroy: %v, %v", ids(list), err)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatalf("second destroy: %v", err)
	}
}

// Public addresses: the launch response has none, the listing does, and
// the executor uses it once it is known.
func TestPublicAddressAppearsAfterLaunch(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	opts := driverOptions(srv, newSigner(t))
	opts.UsePrivateIP = false
	d := newDriver(t, opts)
	inst, err := d.Create(ctx, small, tagsFor(small, "pub"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Address() != "" {
		t.Fatalf("address before any listing %q", inst.Address())
	}
	x, err := d.Executor(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, _, err := x.Execute(ctx, "true", nil); err == nil {
		t.Fatal("execute without an address succeeded")
	}
	if _, err := d.Instances(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if want := srv.Instances()[0].Address; inst.Address() != want {
		t.Fatalf("address %q, want %q", inst.Address(), want)
	}
	if out, _, err := x.Execute(ctx, "cat .dispatch-tui-secret", nil); err != nil || string(out) != "pub\n" {
		t.Fatalf("execute: %q, %v", out, err)
	}
}

// Every EC2 error code the issue names maps onto the pool's kind, and
// throttles and capacity errors are not retried inside the SDK.
func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	clk := newFakeClock()
	opts := driverOptions(srv, newSigner(t))
	opts.SubnetIDs = nil
	opts.MaxAttempts = 3 // transient errors are retried, the mapped ones not
	opts.Now = clk.Now
	d := newDriver(t, opts)
	if _, err := d.Create(ctx, small, tagsFor(small, "warm")); err != nil { // imports the key
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action, code, kind string
		calls              int // requests the call made
	}{
		{"RunInstances", "InsufficientInstanceCapacity", "capacity", 1},
		{"RunInstances", "InstanceLimitExceeded", "quota", 1},
		{"RunInstances", "VcpuLimitExceeded", "quota", 1},
		{"RunInstances", "MaxSpotInstanceCountExceeded", "quota", 1},
		{"RunInstances", "RequestLimitExceeded", "rate_limit", 1},
		{"RunInstances", "Throttling", "rate_limit", 1},
		{"RunInstances", "UnauthorizedOperation", "permanent", 1},
		{"RunInstances", "InvalidAMIID.NotFound", "permanent", 1},
		{"RunInstances", "InvalidParameterValue", "permanent", 1},
		{"RunInstances", "InternalError", "other", 3},
		{"DescribeInstances", "RequestLimitExceeded", "rate_limit", 1},
		{"DescribeInstances", "UnauthorizedOperation", "permanent", 1},
		{"TerminateInstances", "RequestLimitExceeded", "rate_limit", 1},
		{"CreateTags", "UnauthorizedOperation", "permanent", 1},
	} {
		t.Run(tc.action+"/"+tc.code, func(t *testing.T) {
			srv.Configure(func(f *ec2test.Faults) { f.Errors = map[string]string{tc.action: tc.code} })
			defer srv.Configure(func(f *ec2test.Faults) { f.Errors = nil })
			before := srv.Calls(tc.action)
			var err error
			switch tc.action {
			case "RunInstances":
				_, err = d.Create(ctx, small, tagsFor(small, "x"))
			case "DescribeInstances":
				_, err = d.Instances(ctx, nil)
			default:
				srv.Configure(func(f *ec2test.Faults) { f.Errors = nil })
				list, lerr := d.Instances(ctx, nil)
				if lerr != nil || len(list) == 0 {
					t.Fatalf("list: %v %v", ids(list), lerr)
				}
				srv.Configure(func(f *ec2test.Faults) { f.Errors = map[string]string{tc.action: tc.code} })
				before = srv.Calls(tc.action)
				if tc.action == "TerminateInstances" {
					err = list[0].Destroy(ctx)
				} else {
					err = list[0].SetTags(ctx, list[0].Tags())
				}
			}
			if got := cloud.ErrorKind(err); got != tc.kind {
				t.Fatalf("error %v: kind %q, want %q", err, got, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.code) {
				t.Errorf("error %q does not name the code %s", err, tc.code)
			}
			if n := srv.Calls(tc.action) - before; n != tc.calls {
				t.Errorf("%d requests, want %d", n, tc.calls)
			}
			if ce, ok := cloud.AsCapacity(err); ok && ce.InstanceType != "t3.small" {
				t.Errorf("capacity error for type %q, want t3.small", ce.InstanceType)
			}
			if rl, ok := cloud.AsRateLimit(err); ok && !rl.RetryAfter.After(clk.Now()) {
				t.Errorf("rate limit until %s, not after now %s", rl.RetryAfter, clk.Now())
			}
			if cloud.IsPermanent(err) && !strings.Contains(err.Error(), "[cloud.ec2]") {
				t.Errorf("permanent error %q does not say what to check", err)
			}
		})
	}
}

// The faults that come from the account's state, not a forced code, map
// the same way.
func TestLimitsAndCapacityFromState(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	for _, tc := range []struct {
		name  string
		fault func(*ec2test.Faults)
		it    cloud.InstanceType
		kind  string
	}{
		{"instance limit", func(f *ec2test.Faults) { f.InstanceLimit = 1 }, small, "quota"},
		{"vcpu limit", func(f *ec2test.Faults) { f.VCPULimit = 4; f.VCPUs = map[string]int{"m5.2xlarge": 8} }, large, "quota"},
		{"spot limit", func(f *ec2test.Faults) { f.SpotLimit = 1 }, spot, "quota"},
		{"type capacity", func(f *ec2test.Faults) { f.CapacityTypes = map[string]bool{"m5.2xlarge": true} }, large, "capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Configure(func(f *ec2test.Faults) { *f = ec2test.Faults{} })
			if tc.it.Preemptible {
				if _, err := d.Create(ctx, tc.it, tagsFor(tc.it, "first "+tc.name)); err != nil {
					t.Fatal(err)
				}
			} else if len(srv.Live()) == 0 {
				if _, err := d.Create(ctx, small, tagsFor(small, "first "+tc.name)); err != nil {
					t.Fatal(err)
				}
			}
			srv.Configure(tc.fault)
			_, err := d.Create(ctx, tc.it, tagsFor(tc.it, "x "+tc.name))
			if got := cloud.ErrorKind(err); got != tc.kind {
				t.Fatalf("error %v: kind %q, want %q", err, got, tc.kind)
			}
		})
	}
}

// Throttles in a row pause longer each time, up to the maximum; a call
// that gets through resets the back-off.
func TestThrottleBackoffGrows(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	clk := newFakeClock()
	opts := driverOptions(srv, newSigner(t))
	opts.Now = clk.Now
	opts.ThrottleBackoff = time.Second
	opts.MaxThrottleBackoff = 4 * time.Second
	d := newDriver(t, opts)
	wait := func() time.Duration {
		t.Helper()
		_, err := d.Instances(ctx, nil)
		rl, ok := cloud.AsRateLimit(err)
		if !ok {
			t.Fatalf("not a rate limit: %v", err)
		}
		return rl.RetryAfter.Sub(clk.Now())
	}
	srv.Configure(func(f *ec2test.Faults) { f.Errors = map[string]string{"DescribeInstances": "RequestLimitExceeded"} })
	var got []time.Duration
	for range 4 {
		got = append(got, wait())
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("back-offs %v, want %v", got, want)
	}
	srv.Configure(func(f *ec2test.Faults) { f.Errors = nil })
	if _, err := d.Instances(ctx, nil); err != nil {
		t.Fatal(err)
	}
	srv.Configure(func(f *ec2test.Faults) { f.Errors = map[string]string{"DescribeInstances": "RequestLimitExceeded"} })
	if w := wait(); w != time.Second {
		t.Fatalf("back-off after a success %s, want 1s", w)
	}
}

// Bad credentials are a permanent error, not something to retry.
func TestWrongCredentialsArePermanent(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	opts := driverOptions(srv, newSigner(t))
	opts.Credentials = nil
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDWRONG")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	d := newDriver(t, opts)
	_, err := d.Instances(context.Background(), nil)
	if !cloud.IsPermanent(err) || !strings.Contains(err.Error(), "AuthFailure") {
		t.Fatalf("listing with wrong credentials: %v", err)
	}
	// The environment the server names works.
	srv.SetEnv(t)
	d = newDriver(t, opts)
	if _, err := d.Instances(context.Background(), nil); err != nil {
		t.Fatalf("listing with the server's environment: %v", err)
	}
}

// Subnet-specific errors move the create to the next subnet, and the
// subnet that worked is tried first next time.
func TestSubnetFailover(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{Subnets: []string{"subnet-a", "subnet-b", "subnet-c"}})
	opts := driverOptions(srv, newSigner(t))
	opts.SubnetIDs = []string{"subnet-a", "subnet-b", "subnet-c"}
	d := newDriver(t, opts)
	srv.Configure(func(f *ec2test.Faults) {
		f.FullSubnets = map[string]bool{"subnet-a": true}
		f.CapacitySubnets = map[string]bool{"subnet-b": true}
	})
	runs := srv.Calls("RunInstances")
	if _, err := d.Create(ctx, small, tagsFor(small, "1")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("RunInstances") - runs; n != 3 {
		t.Errorf("first create took %d RunInstances, want 3", n)
	}
	runs = srv.Calls("RunInstances")
	if _, err := d.Create(ctx, small, tagsFor(small, "2")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("RunInstances") - runs; n != 1 {
		t.Errorf("second create took %d RunInstances, want 1 (the remembered subnet)", n)
	}
	for _, in := range srv.Instances() {
		if in.Subnet != "subnet-c" {
			t.Errorf("instance %s in %s, want subnet-c", in.ID, in.Subnet)
		}
	}

	// Every subnet out of capacity for the type: a capacity error for the
	// type. Every subnet full: capacity error for the whole provider.
	srv.Configure(func(f *ec2test.Faults) {
		f.FullSubnets = nil
		f.CapacitySubnets = map[string]bool{"subnet-a": true, "subnet-b": true, "subnet-c": true}
	})
	_, err := d.Create(ctx, small, tagsFor(small, "3"))
	if ce, ok := cloud.AsCapacity(err); !ok || ce.InstanceType != "t3.small" {
		t.Fatalf("all subnets without capacity: %v", err)
	}
	srv.Configure(func(f *ec2test.Faults) {
		f.CapacitySubnets = nil
		f.FullSubnets = map[string]bool{"subnet-a": true, "subnet-b": true, "subnet-c": true}
	})
	_, err = d.Create(ctx, small, tagsFor(small, "4"))
	if ce, ok := cloud.AsCapacity(err); !ok || ce.InstanceType != "" {
		t.Fatalf("all subnets full: %v", err)
	}
	// A subnet that does not exist is a configuration error.
	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = nil })
	opts.SubnetIDs = []string{"subnet-typo"}
	_, err = newDriver(t, opts).Create(ctx, small, tagsFor(small, "5"))
	if !cloud.IsPermanent(err) {
		t.Fatalf("unknown subnet: %v", err)
	}
}

// Listings page through NextToken.
func TestPagination(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	opts := driverOptions(srv, newSigner(t))
	opts.PageSize = 5
	d := newDriver(t, opts)
	var want []string
	for i := range 12 {
		it := small
		if i%2 == 1 {
			it = large
		}
		inst, err := d.Create(ctx, it, tagsFor(it, fmt.Sprint("p", i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(inst.ID()))
	}
	slices.Sort(want)
	// A second driver has no memory of the creates: all it lists comes
	// from the pages. It retries a transient failure, as the product
	// does: with one attempt, about one run in 200 failed here reading a
	// page on a connection closed under it ("use of closed network
	// connection", which the SDK retries).
	opts.MaxAttempts = ec2.DefaultMaxAttempts
	d2 := newDriver(t, opts)
	before := srv.Calls("DescribeInstances")
	list, err := d2.Instances(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(list), want) {
		t.Fatalf("listed %v, want %v", ids(list), want)
	}
	if n := srv.Calls("DescribeInstances") - before; n < 3 {
		t.Errorf("%d DescribeInstances calls, want 3 pages (and any retried)", n)
	}
	list, err = d2.Instances(ctx, cloud.Tags{cloud.TagInstanceType: "large"})
	if err != nil || len(list) != 6 {
		t.Fatalf("large ones: %v, %v", ids(list), err)
	}
}

// An instance the driver created is listed while DescribeInstances does
// not show it yet, for the grace period; one created elsewhere is not.
func TestEventualConsistency(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	clk := newFakeClock()
	opts := driverOptions(srv, newSigner(t))
	opts.Now = clk.Now
	opts.ListGrace = 5 * time.Minute
	d := newDriver(t, opts)
	srv.Configure(func(f *ec2test.Faults) { f.ListDelay = time.Hour })
	inst, err := d.Create(ctx, small, tagsFor(small, "ec"))
	if err != nil {
		t.Fatal(err)
	}
	other := newDriver(t, opts)
	if list, _ := other.Instances(ctx, nil); len(list) != 0 {
		t.Fatalf("the endpoint already lists it: %v", ids(list))
	}
	for _, filter := range []cloud.Tags{nil, {cloud.TagOwner: "dispatcher-1"}} {
		list, err := d.Instances(ctx, filter)
		if err != nil || !slices.Equal(ids(list), []string{string(inst.ID())}) {
			t.Fatalf("listing (filter %v) while EC2 lags: %v, %v", filter, ids(list), err)
		}
	}
	if list, _ := d.Instances(ctx, cloud.Tags{cloud.TagOwner: "other"}); len(list) != 0 {
		t.Fatalf("filter not applied to remembered instances: %v", ids(list))
	}
	clk.Advance(4 * time.Minute)
	if list, _ := d.Instances(ctx, nil); len(list) != 1 {
		t.Fatalf("lost before the grace period ended: %v", ids(list))
	}
	clk.Advance(time.Minute)
	if list, _ := d.Instances(ctx, nil); len(list) != 0 {
		t.Fatalf("still listed after the grace period: %v", ids(list))
	}

	// Destroyed while EC2 lags: not listed any more.
	inst2, err := d.Create(ctx, small, tagsFor(small, "ec2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := inst2.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _ := d.Instances(ctx, nil); len(list) != 0 {
		t.Fatalf("destroyed instance listed: %v", ids(list))
	}
}

// Preemptible types launch as spot; an interruption ends the instance and
// it leaves the listing.
func TestSpotForPreemptibleTypes(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{ShutdownTime: 200 * time.Millisecond})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	onDemand, err := d.Create(ctx, small, tagsFor(small, "od"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := d.Create(ctx, spot, tagsFor(spot, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ec2test.Instance{}
	for _, in := range srv.Instances() {
		byID[in.ID] = in
	}
	if byID[string(sp.ID())].Spot != true || byID[string(onDemand.ID())].Spot != false {
		t.Fatalf("spot flags at the provider: %+v", byID)
	}
	list, err := d.Instances(ctx, nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", ids(list), err)
	}
	for _, in := range list {
		if got := in.(*ec2.Instance).Spot(); got != (in.ID() == sp.ID()) {
			t.Errorf("%s: Spot() = %v", in.ID(), got)
		}
	}
	if err := srv.Interrupt(string(sp.ID())); err != nil {
		t.Fatal(err)
	}
	onlyOnDemand := func(what string) {
		t.Helper()
		seen := func() string { return fmt.Sprint("listed ", ids(list), " ", err) }
		wait.With{Seen: seen}.Until(t, what+": only "+string(onDemand.ID())+" listed", 30*time.Second, func() bool {
			list, err = d.Instances(ctx, nil)
			return err == nil && slices.Equal(ids(list), []string{string(onDemand.ID())})
		})
	}
	onlyOnDemand("after the interruption")
	if err := srv.Interrupt(string(onDemand.ID())); err == nil {
		t.Fatal("interrupted an on-demand instance")
	}
	// Interrupted before any listing showed it: EC2 lists it as
	// terminated, which tells it is gone and not lagging.
	sp2, err := d.Create(ctx, spot, tagsFor(spot, "sp2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Interrupt(string(sp2.ID())); err != nil {
		t.Fatal(err)
	}
	onlyOnDemand("after an interruption before any listing")
}

// The user-data script carries what ParseUserData reads back, and the
// shell it is written in accepts it.
func TestUserDataRoundTrip(t *testing.T) {
	s := newSigner(t)
	ud := ec2.UserData("crunch", s.PublicKey(), "abc123", ec2.Scratch{})
	user, key, secret, ok := ec2.ParseUserData(ud)
	if !ok || user != "crunch" || secret != "abc123" || key != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey()))) {
		t.Fatalf("parsed %q %q %q %v from\n%s", user, key, secret, ok, ud)
	}
	if !strings.HasPrefix(string(ud), "#!/bin/sh\n") || !strings.Contains(string(ud), ec2.SecretFile) {
		t.Fatalf("user-data:\n%s", ud)
	}
	if _, _, _, ok := ec2.ParseUserData([]byte("#!/bin/sh\necho hi\n")); ok {
		t.Fatal("parsed a foreign script")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	good := driverOptions(srv, newSigner(t))
	for _, tc := range []struct {
		name   string
		change func(*ec2.Options)
		want   string
	}{
		{"no region", func(o *ec2.Options) { o.Region = "" }, "region"},
		{"no image", func(o *ec2.Options) { o.ImageID = "" }, "image"},
		{"no key", func(o *ec2.Options) { o.Signer = nil }, "key"},
		{"bad user", func(o *ec2.Options) { o.AdminUser = "root; rm" }, "admin user"},
		{"dsa key", func(o *ec2.Options) { o.Signer = dsaTyped{o.Signer} }, "DSA key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.change(&o)
			_, err := ec2.New(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// A hung endpoint does not hold a call for ever: each request has a
// deadline.
func TestRequestTimeout(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	opts := driverOptions(srv, newSigner(t))
	opts.RequestTimeout = 50 * time.Millisecond
	d := newDriver(t, opts)
	srv.Configure(func(f *ec2test.Faults) { f.Latency = time.Minute })
	start := time.Now()
	_, err := d.Instances(context.Background(), nil)
	if err == nil {
		t.Fatal("listing a hung endpoint succeeded")
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("listing a hung endpoint took %s", waited)
	}
	srv.Configure(func(f *ec2test.Faults) { f.Latency = 0 })
}

// dsaTyped is a signer whose key says it is DSA: all the driver's check
// reads.
type dsaTyped struct{ ssh.Signer }

func (s dsaTyped) PublicKey() ssh.PublicKey { return dsaKey{s.Signer.PublicKey()} }

type dsaKey struct{ ssh.PublicKey }

func (dsaKey) Type() string { return "ssh-dss" }
