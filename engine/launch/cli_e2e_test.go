package launch

// End-to-end test of the daemon's API through the real binary's client
// commands: submit, ls, instance and container verbs, pause.

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/wait"
)

type cliHarness struct {
	t      *testing.T
	env    []string
	server string
}

// cli runs the binary with args and returns stdout; it fails the test on a
// non-zero exit unless wantCode says otherwise.
func (h *cliHarness) cli(wantCode int, args ...string) string {
	h.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = h.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	if code != wantCode {
		h.t.Fatalf("dispatch-tui %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantCode, out.String(), errb.String())
	}
	return out.String()
}

func (h *cliHarness) ls(what string) map[string]enginetest.LsItem {
	h.t.Helper()
	return enginetest.LsItems(h.t, h.cli(0, "ls", what, "-o", "json"))
}

func (h *cliHarness) submit(args ...string) string {
	h.t.Helper()
	return strings.TrimSpace(h.cli(0, append([]string{"submit"}, args...)...))
}

func TestDaemonAPIThroughCLI(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	port := freeport.For(t)
	cfgPath := daemonConfig(t, state)
	b, _ := os.ReadFile(cfgPath)
	b = bytes.Replace(b, []byte("[dispatcher]\n"), []byte(fmt.Sprintf("[dispatcher]\nlisten = \"127.0.0.1:%d\"\ntoken = \"e2e-token\"\n", port)), 1)
	b = bytes.Replace(b, []byte("timeout_idle = \"1m\""), []byte("timeout_idle = \"1h\""), 1)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(binary, "--daemon", "--config", cfgPath)
	var logs bytes.Buffer
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			daemon.Process.Kill()
			daemon.Wait()
		}
		if t.Failed() { // the daemon has exited: its log is complete
			out := logs.String()
			t.Logf("daemon log (last 8 KiB):\n%s", out[max(0, len(out)-8192):])
		}
		destroyInstances(e2eConfig(state))
	})
	server := fmt.Sprintf("127.0.0.1:%d", port)
	wait.Until(t, "daemon healthz", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + server + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	h := &cliHarness{t: t, server: server, env: append(os.Environ(), "DISPATCH_TUI_SERVER="+server, "DISPATCH_TUI_TOKEN=e2e-token")}

	// A wrong token is refused with exit 1.
	bad := &cliHarness{t: t, env: append(os.Environ(), "DISPATCH_TUI_SERVER="+server, "DISPATCH_TUI_TOKEN=wrong")}
	bad.cli(1, "ls", "instances")
	h.cli(2, "submit") // no command: usage error

	// 50 containers reach Complete.
	var ids []string
	for i := 0; i < 50; i++ {
		ids = append(ids, h.submit("--name", fmt.Sprintf("batch-%d", i), "--env", "N="+fmt.Sprint(i), "--", "sh", "-c", "exit $((N % 3))"))
	}
	var notDone []string // as last listed, for the failure message
	t.Cleanup(func() {
		if t.Failed() && len(notDone) > 0 {
			t.Logf("not Complete at the last listing: %s", strings.Join(notDone, "; "))
		}
	})
	wait.Until(t, "50 containers Complete", 2*time.Minute, func() bool {
		cs := h.ls("containers")
		notDone = notDone[:0]
		for _, id := range ids {
			if cs[id].State != "Complete" {
				notDone = append(notDone, fmt.Sprintf("%s %s %s", id, cs[id].State, cs[id].Reason))
			}
		}
		return len(notDone) == 0
	})
	cs := h.ls("containers")
	for i, id := range ids {
		if c := cs[id]; c.ExitCode == nil || *c.ExitCode != i%3 {
			t.Fatalf("container %d exit %v, want %d", i, c.ExitCode, i%3)
		}
	}

	// Hold an instance: it gets nothing new.
	var held string
	for id, inst := range h.ls("instances") {
		if inst.State == "idle" {
			held = id
			break
		}
	}
	if held == "" {
		t.Fatalf("no idle instance to hold: %v", h.ls("instances"))
	}
	h.cli(0, "hold", "--reason", "e2e", held)
	if got := h.ls("instances")[held].IdleBehavior; got != "hold" {
		t.Fatalf("held instance shows %q", got)
	}
	long := h.submit("--", "sleep", "30")
	wait.Until(t, "long container running", time.Minute, func() bool { return h.ls("containers")[long].State == "Running" })
	if h.ls("containers")[long].InstanceID == held {
		t.Fatalf("container started on the held instance")
	}
	// Run it again, then drain it: idle, so it goes away.
	h.cli(0, "run", held)
	h.cli(0, "drain", held)
	wait.Until(t, "drained instance gone", time.Minute, func() bool { _, ok := h.ls("instances")[held]; return !ok })

	// Kill the instance running the long container: it is requeued.
	busy := h.ls("containers")[long].InstanceID
	h.cli(0, "kill", "--reason", "e2e instance kill", busy)
	wait.Until(t, "requeued and running again", time.Minute, func() bool {
		c := h.ls("containers")[long]
		return c.State == "Running" && c.InstanceID != busy
	})

	// Container verbs: priority, hold, release, kill.
	h.cli(0, "pause", "--reason", "e2e")
	waiting := h.submit("--priority", "1", "--", "true")
	wait.Until(t, "pending reason PAUSED", 20*time.Second, func() bool { return h.ls("containers")[waiting].ReasonCode == "PAUSED" })
	if c := h.ls("containers")[waiting]; c.State != "Queued" {
		t.Fatalf("paused scheduler: container %s %s", c.State, c.ReasonCode)
	}
	h.cli(0, "priority", waiting, "7")
	h.cli(0, "hold", waiting)
	if c := h.ls("containers")[waiting]; c.Priority != 7 || !c.Held {
		t.Fatalf("after priority+hold: %+v", c)
	}
	h.cli(0, "resume")
	wait.Until(t, "pending reason HELD", 20*time.Second, func() bool { return h.ls("containers")[waiting].ReasonCode == "HELD" })
	if c := h.ls("containers")[waiting]; c.State != "Queued" {
		t.Fatalf("held container: %s %s", c.State, c.ReasonCode)
	}
	h.cli(0, "release", waiting)
	wait.Until(t, "released container completes", time.Minute, func() bool { return h.ls("containers")[waiting].State == "Complete" })
	h.cli(0, "kill", "--reason", "e2e kill", long)
	wait.Until(t, "killed container Cancelled", time.Minute, func() bool { return h.ls("containers")[long].State == "Cancelled" })
	if c := h.ls("containers")[long]; c.Reason != "e2e kill" {
		t.Fatalf("killed container reason %q", c.Reason)
	}
	h.cli(3, "hold", "c-0000000000000000") // unknown container: server says 404, exit 3 (not found)

	// Events record the verbs with actor and reason.
	ev := h.cli(0, "ls", "events", "-o", "json")
	for _, want := range []string{`"action": "hold"`, `"reason": "e2e instance kill"`, `"actor": "token:default"`} {
		if !strings.Contains(ev, want) {
			t.Fatalf("events lack %s", want)
		}
	}

	// A dispatcher alone lists itself as the cluster: leading, at epoch 0.
	if nodes := h.cli(0, "ls", "nodes", "-o", "json"); !strings.Contains(nodes, `"role": "leader"`) || !strings.Contains(nodes, `"epoch": 0`) {
		t.Fatalf("ls nodes of a single dispatcher: %s; want it leading at epoch 0", nodes)
	}

	// Tables stay readable at 80 columns.
	narrow := &cliHarness{t: t, env: append(append([]string(nil), h.env...), "COLUMNS=80")}
	for _, what := range []string{"instances", "containers", "types", "events", "nodes"} {
		for _, line := range strings.Split(narrow.cli(0, "ls", what), "\n") {
			if n := len([]rune(line)); n > 80 {
				t.Fatalf("ls %s: line of %d columns: %q", what, n, line)
			}
		}
	}

	// SIGTERM: exit 0 within 5 s.
	sent := time.Now()
	daemon.Process.Signal(syscall.SIGTERM)
	if err := daemon.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, logs.String())
	}
	stopped = true
	if d := time.Since(sent); d > 5*time.Second {
		t.Fatalf("daemon took %s to stop", d)
	}

	// The event log survives a restart.
	again := exec.Command(binary, "--daemon", "--config", cfgPath)
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { again.Process.Signal(syscall.SIGTERM); again.Wait() }()
	wait.Until(t, "daemon up again", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + server + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	if ev := h.cli(0, "ls", "events", "-o", "json"); !strings.Contains(ev, `"reason": "e2e instance kill"`) {
		t.Fatalf("events lost across the restart")
	}
}

func TestDaemonRefusesUnsafeListeners(t *testing.T) {
	for _, tc := range []struct {
		name, keys, want string
	}{
		{"no token on loopback", "listen = \"127.0.0.1:%d\"\n", "token"},
		{"no token off loopback", "listen = \"0.0.0.0:%d\"\n", "token"},
		{"plain HTTP off loopback", "listen = \"0.0.0.0:%d\"\ntoken = \"t\"\ntls = \"off\"\n", "plain HTTP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgPath := daemonConfig(t, t.TempDir())
			b, _ := os.ReadFile(cfgPath)
			b = bytes.Replace(b, []byte("[dispatcher]\n"), []byte("[dispatcher]\n"+fmt.Sprintf(tc.keys, freeport.For(t))), 1)
			if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(binary, "--daemon", "--config", cfgPath)
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("daemon: %v, want exit 1\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("refusal does not say %q: %s", tc.want, stderr.String())
			}
		})
	}
}
