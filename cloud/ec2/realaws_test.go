//go:build linux

package ec2_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
)

// TestRealAWS creates one small instance in a real AWS account, waits for
// SSH and the secret check, sets and reads back tags and terminates it. It
// runs only with AWS credentials in the environment and
// DISPATCH_TUI_EC2_IMAGE_ID set, and never in CI (CI=true). It costs
// money: a few minutes of one instance.
//
//	DISPATCH_TUI_EC2_IMAGE_ID            AMI (required), e.g. a Debian image
//	AWS_REGION                           region (required)
//	DISPATCH_TUI_EC2_TYPE                instance type (default t3.micro)
//	DISPATCH_TUI_EC2_SUBNET_IDS          comma-separated; default VPC if unset
//	DISPATCH_TUI_EC2_SECURITY_GROUP_IDS  comma-separated; must allow SSH from here
func TestRealAWS(t *testing.T) {
	if os.Getenv("CI") == "true" {
		t.Skip("CI=true: the real-AWS test never runs in CI")
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		t.Skip("no AWS credentials in the environment (AWS_ACCESS_KEY_ID or AWS_PROFILE): skipping the real-AWS test")
	}
	image, region := os.Getenv("DISPATCH_TUI_EC2_IMAGE_ID"), os.Getenv("AWS_REGION")
	if image == "" || region == "" {
		t.Skip("AWS credentials found, but DISPATCH_TUI_EC2_IMAGE_ID and AWS_REGION are not both set: skipping the real-AWS test")
	}
	typ := os.Getenv("DISPATCH_TUI_EC2_TYPE")
	if typ == "" {
		typ = "t3.micro"
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	signer := newSigner(t)
	d := newDriver(t, ec2.Options{
		Region: region, ImageID: image, Signer: signer,
		SubnetIDs:        split(os.Getenv("DISPATCH_TUI_EC2_SUBNET_IDS")),
		SecurityGroupIDs: split(os.Getenv("DISPATCH_TUI_EC2_SECURITY_GROUP_IDS")),
		KeyPairName:      os.Getenv("DISPATCH_TUI_EC2_KEY_PAIR"),
		Tags:             map[string]string{"Name": "dispatch-tui real-AWS test"},
		MetadataHopLimit: 1,
	})
	it := cloud.InstanceType{Name: "test", ProviderType: typ, VCPUs: 2, RAM: 1 << 30}
	owner := "dispatch-tui-realaws-test"
	inst, err := d.Create(ctx, it, cloud.Tags{cloud.TagOwner: owner, cloud.TagInstanceType: "test", cloud.TagSecret: "realaws" + time.Now().Format("150405")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Destroy(context.Background()); err != nil {
			t.Errorf("TERMINATE %s BY HAND: %v", inst.ID(), err)
		}
	})
	t.Logf("created %s", inst)
	x, err := d.Executor(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for {
		if _, err := d.Instances(ctx, cloud.Tags{cloud.TagOwner: owner}); err != nil {
			t.Logf("list: %v", err)
		}
		out, _, err := x.Execute(ctx, "cat .dispatch-tui-secret", nil)
		if err == nil {
			if strings.TrimSpace(string(out)) != inst.Tags()[cloud.TagSecret] {
				t.Fatalf("secret %q", out)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("instance never answered: %v", err)
		}
		t.Logf("waiting for SSH: %v", err)
		time.Sleep(10 * time.Second)
	}
	tags := inst.Tags()
	tags[cloud.TagIdleBehavior] = "hold"
	if err := inst.SetTags(ctx, tags); err != nil {
		t.Fatal(err)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
}
