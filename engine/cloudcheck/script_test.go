//go:build linux

package cloudcheck

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud/sshserver"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner/agent"
)

// scriptHosts starts n in-process SSH servers accepting the key in
// keyFile (written here), each with a home that the fake cloud's create
// makes and its destroy removes, and returns the fake cloud's addresses
// file content.
func scriptHosts(t *testing.T, n int, keyFile string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "cloudcheck test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	var addrs strings.Builder
	for i := range n {
		_, hpriv, _ := ed25519.GenerateKey(rand.Reader)
		hostKey, err := ssh.NewSignerFromKey(hpriv)
		if err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(t.TempDir(), fmt.Sprintf("host%d", i))
		srv, err := sshserver.Start(sshserver.Config{
			HostKey: hostKey, ClientKeys: []ssh.PublicKey{client.PublicKey()}, Home: home,
			// The runner's state on the host's own disk, as on a machine.
			Env: []string{agent.StateDirEnv + "=" + filepath.Join(home, "runner.d")},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		fmt.Fprintf(&addrs, "%s %s\n", srv.Addr(), home)
	}
	return addrs.String()
}

// scriptConfig writes a config for the script driver on the fake cloud
// (cloud/script/testdata/fakecloud) over n hosts, and returns its path
// and the fake cloud's directory.
func scriptConfig(t *testing.T, n int) (path, cloudDir string) {
	t.Helper()
	for _, tool := range []string{"jq", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " not found: the script driver's test scripts need it (.ci/run installs jq)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	fc, err := filepath.Abs("../../cloud/script/testdata/fakecloud")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cloudDir = filepath.Join(dir, "cloud")
	if err := os.MkdirAll(filepath.Join(cloudDir, "faults"), 0o755); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "client_key")
	if err := os.WriteFile(filepath.Join(cloudDir, "addresses"), []byte(scriptHosts(t, n, keyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`[dispatcher]
state_dir = %q

[cloud]
driver = "script"
ssh_key_file = %q
# In the host's home, as on a machine of its own (the hosts share /tmp).
runner_path = "./dispatch-tui-runner"

[cloud.script]
create = [%[3]q, "create"]
list = [%[3]q, "list"]
destroy = [%[3]q, "destroy"]
set_tags = [%[3]q, "set_tags"]
env = ["PATH", "FAKECLOUD_DIR=%[4]s"]
timeout = "30s"

[[instance_type]]
name = "small"
provider_type = "n1-standard-1"
vcpus = 1
ram = "2GiB"
price = 0.05
`, filepath.Join(dir, "state"), keyFile, fc, cloudDir)
	path = filepath.Join(dir, "script.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return path, cloudDir
}

func fakeInstances(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "instances", "*.json"))
	return m
}

// The check holds on the script driver over the test scripts: create
// hands over the key and the secret, the runner is deployed over SSH and
// runs a container, tags round-trip through set_tags and list, and
// destroy leaves nothing.
func TestEveryStepHoldsOnScript(t *testing.T) {
	path, cloudDir := scriptConfig(t, 1)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Run(context.Background(), cfg, Options{RunnerBinary: realRunner(t), Poll: 10 * time.Millisecond, Timeout: wait.Budget(2 * time.Minute)}, &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, &out)
	}
	wantLines(t, out.String(), Steps, func(string) string { return "ok" })
	if left := fakeInstances(cloudDir); len(left) != 0 {
		t.Errorf("instances left in the fake cloud: %v", left)
	}
}

// The command as an operator runs it, the real binary in a child process:
// exit 0 with every step held; with the create refused for capacity, exit
// 1 naming the step and showing what the script said, nothing left.
func TestCommandOnScript(t *testing.T) {
	bin := realRunner(t)
	path, cloudDir := scriptConfig(t, 1)
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"--config", path, "cloudtest"}, args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	code, out := run("--timeout", "2m")
	if code != 0 || !strings.Contains(out, "cloudtest: ok, every step held") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	t.Logf("dispatch-tui cloudtest:\n%s", out)
	if err := os.WriteFile(filepath.Join(cloudDir, "faults", "create"), []byte("capacity\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = run("--timeout", "1m")
	if code != 1 || !strings.Contains(out, `cloudtest: FAILED at step "create"`) || !strings.Contains(out, "no capacity for n1-standard-1") {
		t.Fatalf("with no capacity: exit %d, want 1, the create step named and the script's words:\n%s", code, out)
	}
	t.Logf("dispatch-tui cloudtest, no capacity:\n%s", out)
	if left := fakeInstances(cloudDir); len(left) != 0 {
		t.Errorf("instances left in the fake cloud: %v", left)
	}
}
