//go:build linux

package ec2_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/runner/agent"
)

// TestMain lets the test binary be the runner on the instances: a session
// running "<test binary> runner <verb>" runs the agent.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		// No Hash: "runner version" hashes this binary when asked, as
		// launch computes it; every other verb (a list each probe) would
		// pay for hashing the 40 MB -race binary for nothing.
		os.Exit(agent.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, agent.Env{Version: "0.0.0-test"}))
	}
	// The HA test's database server, stopped after the tests.
	os.Exit(pgtest.Run(m))
}

// fakeClock is the driver's clock in tests that move time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// driverOptions are Options for a driver on srv: only the endpoint and
// dummy static credentials tell it where it is.
func driverOptions(srv *ec2test.Server, signer ssh.Signer) ec2.Options {
	return ec2.Options{
		Region:       ec2test.Region,
		Endpoint:     srv.URL(),
		Credentials:  credentials.NewStaticCredentialsProvider(ec2test.AccessKeyID, ec2test.SecretAccessKey, ""),
		ImageID:      ec2test.ImageID,
		SubnetIDs:    []string{"subnet-a", "subnet-b"},
		Signer:       signer,
		SSHPort:      srv.SSHPort(),
		UsePrivateIP: true,
		MaxAttempts:  1,
		// The engine's config default: only the instance gets a token.
		MetadataHopLimit: 1,
	}
}

func newDriver(t testing.TB, opts ec2.Options) *ec2.Driver {
	t.Helper()
	d, err := ec2.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

var (
	small = cloud.InstanceType{Name: "small", ProviderType: "t3.small", VCPUs: 2, RAM: 2 << 30, Scratch: 20 << 30, Price: 0.02}
	spot  = cloud.InstanceType{Name: "small-spot", ProviderType: "t3.small", VCPUs: 2, RAM: 2 << 30, Price: 0.01, Preemptible: true}
	large = cloud.InstanceType{Name: "large", ProviderType: "m5.2xlarge", VCPUs: 8, RAM: 32 << 30, Price: 0.4}
)

func tagsFor(it cloud.InstanceType, secret string) cloud.Tags {
	return cloud.Tags{
		cloud.TagOwner:        "dispatcher-1",
		cloud.TagInstanceType: it.Name,
		cloud.TagIdleBehavior: "run",
		cloud.TagSecret:       secret,
	}
}

func ids(insts []cloud.Instance) []string {
	out := make([]string, len(insts))
	for i, in := range insts {
		out[i] = string(in.ID())
	}
	return out
}
