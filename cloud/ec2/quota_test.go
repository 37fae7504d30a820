//go:build linux

package ec2_test

import (
	"context"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
)

func TestQuotaGroup(t *testing.T) {
	for typ, want := range map[string]string{
		"c5.large": "standard", "m7i-flex.xlarge": "standard", "t4g.nano": "standard", "z1d.large": "standard",
		"d3en.xlarge": "standard", "i4i.large": "standard", "im4gn.large": "standard", "is4gen.large": "standard",
		"h1.2xlarge": "standard", "a1.medium": "standard", "r7iz.large": "standard",
		"p4d.24xlarge": "p", "p5.48xlarge": "p", "g5.xlarge": "g-vt", "gr6.4xlarge": "g-vt", "vt1.3xlarge": "g-vt",
		"f1.2xlarge": "f", "inf2.xlarge": "inf", "trn1.2xlarge": "trn", "dl1.24xlarge": "dl",
		"x2iedn.xlarge": "x", "u-6tb1.metal": "high-memory", "hpc7a.96xlarge": "hpc", "mac2.metal": "mac",
	} {
		if got := ec2.QuotaGroup(typ); got != want {
			t.Errorf("QuotaGroup(%q) = %q, want %q", typ, got, want)
		}
	}
}

// EC2's vCPU quotas are per family group and market: a create refused by
// the P group's quota says so in its QuotaError's scope, and creates of
// the standard group, or of P as spot, go on.
func TestQuotaErrorNamesItsScope(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	srv.Configure(func(f *ec2test.Faults) {
		f.VCPULimits = map[string]int{"p/on-demand": 0, "standard/spot": 0}
		f.VCPUs = map[string]int{"p3.2xlarge": 8}
	})
	d := newDriver(t, driverOptions(srv, newSigner(t)))
	gpu := cloud.InstanceType{Name: "gpu", ProviderType: "p3.2xlarge", VCPUs: 8, RAM: 61 << 30, GPUs: 1}
	gpuSpot := gpu
	gpuSpot.Name, gpuSpot.Preemptible = "gpu-spot", true
	c5 := cloud.InstanceType{Name: "c5", ProviderType: "c5.large", VCPUs: 2, RAM: 4 << 30}
	c5Spot := c5
	c5Spot.Name, c5Spot.Preemptible = "c5-spot", true

	for _, tc := range []struct {
		it    cloud.InstanceType
		scope string // "" = created
	}{
		{gpu, "p/on-demand"},
		{c5, ""},
		{gpuSpot, ""},
		{c5Spot, "standard/spot"},
	} {
		if got := d.QuotaScope(tc.it); tc.scope != "" && got != tc.scope {
			t.Errorf("QuotaScope(%s) = %q, want %q", tc.it.Name, got, tc.scope)
		}
		_, err := d.Create(ctx, tc.it, tagsFor(tc.it, "s3cr3t-"+tc.it.Name)) // a secret each: one token each
		qe, isQuota := cloud.AsQuota(err)
		switch {
		case tc.scope == "" && err != nil:
			t.Errorf("create %s: %v, want it created", tc.it.Name, err)
		case tc.scope != "" && (!isQuota || qe.Scope != tc.scope):
			t.Errorf("create %s: %v, want a quota error of scope %s", tc.it.Name, err, tc.scope)
		}
	}
}
