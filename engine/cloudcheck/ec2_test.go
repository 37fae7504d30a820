//go:build linux

package cloudcheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
)

// ec2Config writes a config for the ec2 driver on srv, with two types.
func ec2Config(t *testing.T, srv *ec2test.Server) (string, *config.Config) {
	t.Helper()
	src := srv.ConfigTOML() + `
[dispatcher]
state_dir = "` + t.TempDir() + `"

[[instance_type]]
name = "small"
provider_type = "t3.small"
vcpus = 2
ram = "2GiB"
price = 0.02

[[instance_type]]
name = "large"
provider_type = "m5.xlarge"
vcpus = 4
ram = "16GiB"
price = 0.19
`
	path := filepath.Join(t.TempDir(), "aws.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return path, cfg
}

// The check holds on the ec2 driver against the in-repo EC2 endpoint: the
// SDK creates a real instance there (an SSH server honouring the
// user-data's key and secret), the runner is deployed and runs a
// container, and the instance is terminated at the end.
func TestEveryStepHoldsOnEC2(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{BootDelay: 100 * time.Millisecond})
	srv.SetEnv(t)
	_, cfg := ec2Config(t, srv)
	var out bytes.Buffer
	err := Run(context.Background(), cfg, Options{RunnerBinary: realRunner(t), Poll: 10 * time.Millisecond, Timeout: wait.Budget(2 * time.Minute)}, &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, &out)
	}
	wantLines(t, out.String(), Steps, func(string) string { return "ok" })
	if live := srv.Live(); len(live) != 0 {
		t.Errorf("instances left running at the endpoint: %v", live)
	}
	if n := srv.Calls("RunInstances"); n != 1 {
		t.Errorf("RunInstances called %d times, want 1", n)
	}
}

// The command itself, as an operator runs it (the real binary in a child
// process, credentials from the environment): exit 0 with every step
// held; with every create refused, exit 1 naming the step, nothing left.
func TestCommandOnEC2(t *testing.T) {
	bin := realRunner(t)
	srv := ec2test.Start(t, ec2test.Options{BootDelay: 100 * time.Millisecond})
	path, _ := ec2Config(t, srv)
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"--config", path, "cloudtest"}, args...)...)
		cmd.Env = os.Environ()
		for k, v := range srv.Env() {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	// The first subnet is out of addresses, as EC2 says it (in the
	// message of an InvalidParameterValue): the create fails over to the
	// second, each attempt with its own client token.
	srv.SetQuirks(func(q *ec2test.Quirks) { q.SubnetFullByMessage = true })
	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = map[string]bool{"subnet-a": true} })
	code, out := run("--type", "large", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, "cloudtest: ok, every step held") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	t.Logf("dispatch-tui cloudtest --type large:\n%s", out)
	if in := srv.Instances(); len(in) != 1 || in[0].Subnet != "subnet-b" {
		t.Fatalf("instances %+v, want one in subnet-b", in)
	}
	if tokens := srv.ClientTokens(); srv.Calls("RunInstances") != 2 || len(tokens) != 2 || srv.Errors("IdempotentParameterMismatch") != 0 {
		t.Fatalf("%d RunInstances with tokens %v (%d refused as reused): want two, each its own",
			srv.Calls("RunInstances"), tokens, srv.Errors("IdempotentParameterMismatch"))
	}
	srv.Configure(func(f *ec2test.Faults) { f.FullSubnets = nil })
	srv.Configure(func(f *ec2test.Faults) { f.CapacityTypes = map[string]bool{"t3.small": true} })
	code, out = run("--timeout", "1m")
	if code != 1 || !strings.Contains(out, `cloudtest: FAILED at step "create"`) {
		t.Fatalf("with no capacity for t3.small: exit %d, want 1 and the create step named:\n%s", code, out)
	}
	if live := srv.Live(); len(live) != 0 {
		t.Errorf("instances left running at the endpoint: %v", live)
	}
}
