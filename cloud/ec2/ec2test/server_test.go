//go:build linux

package ec2test_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"golang.org/x/crypto/ssh"

	dec2 "dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/enginetest/wait"
)

// userData is the driver's user-data for a fresh key, base64 as the API
// takes it.
func userData(t *testing.T) string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(dec2.UserData("dispatch-tui", key, "s", dec2.Scratch{}))
}

func client(srv *ec2test.Server) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       ec2test.Region,
		BaseEndpoint: aws.String(srv.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider(ec2test.AccessKeyID, ec2test.SecretAccessKey, ""),
	})
}

// Terminated instances as EC2 shows them: TerminateInstances on one
// answers terminated, DescribeInstances lists it for a while (an hour on
// EC2) and then no more, and after that EC2 no longer knows its id.
func TestTerminatedInstances(t *testing.T) {
	ctx := context.Background()
	srv := ec2test.Start(t, ec2test.Options{})
	// Long enough for the calls below on a loaded machine.
	srv.SetQuirks(func(q *ec2test.Quirks) { q.TerminatedListedFor = 3 * time.Second })
	c := client(srv)
	run, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String(ec2test.ImageID), InstanceType: types.InstanceTypeT3Small,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		UserData: aws.String(userData(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(run.Instances[0].InstanceId)
	terminate := func() (types.InstanceStateName, error) {
		out, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return "", err
		}
		return out.TerminatingInstances[0].CurrentState.Name, nil
	}
	if st, err := terminate(); err != nil || st != types.InstanceStateNameShuttingDown {
		t.Fatalf("first terminate: %q, %v; want shutting-down", st, err)
	}
	if st, err := terminate(); err != nil || st != types.InstanceStateNameTerminated {
		t.Fatalf("terminate of a terminated instance: %q, %v; want terminated", st, err)
	}
	listed := func() int {
		out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Reservations)
	}
	if n := listed(); n != 1 {
		t.Fatalf("terminated instance listed in %d reservations, want 1", n)
	}
	wait.Until(t, "the terminated instance gone from listings after TerminatedListedFor", 20*time.Second, func() bool { return listed() == 0 })
	var ae smithy.APIError
	if _, err := terminate(); !errors.As(err, &ae) || ae.ErrorCode() != "InvalidInstanceID.NotFound" {
		t.Fatalf("terminate of a forgotten instance: %v, want InvalidInstanceID.NotFound", err)
	}
}
