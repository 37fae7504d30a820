package launch

// The command line against a running daemon: shell completion of live ids
// (cobra's __complete), -o name into xargs, -o yaml.

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
)

func TestCompletionAndPipesAgainstADaemon(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cfgPath := daemonConfig(t, state)
	daemon := exec.Command(binary, "--daemon", "--config", cfgPath)
	var logs bytes.Buffer
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
		destroyInstances(e2eConfig(state))
	})
	h := &cliHarness{t: t, env: cleanEnv()}
	cfg := []string{"--config", cfgPath}
	wait.Until(t, "daemon socket", 20*time.Second, func() bool {
		cmd := exec.Command(binary, "ls", "types", "--config", cfgPath)
		cmd.Env = h.env
		return cmd.Run() == nil
	})
	ctr := h.submit(append(cfg, "--name", "complete-me", "--", "sleep", "60")...)
	var inst string
	wait.Until(t, "container running", time.Minute, func() bool {
		c := h.lsWith(cfg, "containers")[ctr]
		inst = c.InstanceID
		return c.State == "Running"
	})

	// completeAt runs cobra's completion entry (what the shell scripts
	// call) and returns the candidates.
	completeAt := func(args ...string) []string {
		out := h.cli(0, append(append([]string{"__complete"}, cfg...), args...)...)
		var vals []string
		for _, line := range strings.Split(out, "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				v, _, _ := strings.Cut(line, "\t")
				vals = append(vals, v)
			}
		}
		return vals
	}
	for _, tc := range []struct {
		args       []string
		want, dont []string
	}{
		{[]string{"hold", ""}, []string{inst, ctr}, nil},
		{[]string{"kill", "c-"}, []string{ctr}, []string{inst}},
		{[]string{"drain", ""}, []string{inst}, []string{ctr}},
		{[]string{"logs", ""}, []string{ctr}, []string{inst}},
		{[]string{"release", ""}, nil, []string{ctr, inst}}, // nothing held
		{[]string{"hold", inst, ""}, []string{ctr}, []string{inst}},
		{[]string{"ls", "instances", "--type", ""}, []string{"slot8"}, nil},
		{[]string{"ls", "containers", "--state", "Running,"}, []string{"Running,Queued"}, []string{"Running,Running"}},
	} {
		got := completeAt(tc.args...)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("complete %q: %v lacks %s", tc.args, got, w)
			}
		}
		for _, d := range tc.dont {
			if slices.Contains(got, d) {
				t.Errorf("complete %q: %v has %s", tc.args, got, d)
			}
		}
	}

	// -o name | xargs dispatch-tui hold
	pipe := exec.Command("sh", "-c", `"$0" ls instances -o name --config "$1" | xargs "$0" hold --reason piped --config "$1"`, binary, cfgPath)
	pipe.Env = h.env
	if out, err := pipe.CombinedOutput(); err != nil {
		t.Fatalf("ls -o name | xargs hold: %v\n%s", err, out)
	}
	if got := h.lsWith(cfg, "instances")[inst].IdleBehavior; got != "hold" {
		t.Fatalf("after xargs hold the instance is %q", got)
	}

	// -o yaml parses, with the same ids as -o json.
	var list struct {
		Items []enginetest.LsItem `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(h.cli(0, append([]string{"ls", "containers", "-o", "yaml"}, cfg...)...)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].ID != ctr || list.Items[0].State != "Running" {
		t.Fatalf("-o yaml: %+v", list.Items)
	}
	h.cli(0, append([]string{"kill", ctr}, cfg...)...)
}

// lsWith is ls -o json with extra flags.
func (h *cliHarness) lsWith(flags []string, what string) map[string]enginetest.LsItem {
	h.t.Helper()
	return enginetest.LsItems(h.t, h.cli(0, append([]string{"ls", what, "-o", "json"}, flags...)...))
}
