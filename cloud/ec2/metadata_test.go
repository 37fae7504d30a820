//go:build linux

package ec2_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
)

// Every launch asks for a metadata service that requires tokens and hands
// them out over the configured number of hops, whatever the image's or the
// account's defaults: with IMDSv1 or a hop limit of 2, containers on a
// docker bridge could read the user-data (the instance secret) and the
// role's credentials.
func TestMetadataOptionsAlwaysSent(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	for _, hops := range []int32{1, 3} {
		opts := driverOptions(srv, newSigner(t))
		opts.MetadataHopLimit = hops
		d := newDriver(t, opts)
		inst, err := d.Create(ctx, small, tagsFor(small, fmt.Sprint("s3cr3t-", hops))) // a secret each: one token each
		if err != nil {
			t.Fatal(err)
		}
		for _, si := range srv.Instances() {
			if si.ID != string(inst.ID()) {
				continue
			}
			if !si.IMDSv2 || si.MetadataHopLimit != strconv.Itoa(int(hops)) {
				t.Errorf("hop limit %d: the launch asked for tokens required %v, hop limit %q", hops, si.IMDSv2, si.MetadataHopLimit)
			}
		}
	}
}

// A hop limit EC2 would refuse is refused before any call.
func TestMetadataHopLimitChecked(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	for _, hops := range []int32{0, 65} {
		opts := driverOptions(srv, newSigner(t))
		opts.MetadataHopLimit = hops
		if _, err := ec2.New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "hop limit") {
			t.Errorf("hop limit %d: New = %v, want an error naming the hop limit", hops, err)
		}
	}
	if n := srv.Calls(""); n != 0 {
		t.Errorf("%d API calls, want none", n)
	}
}
