package launch

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

var crashContainers = flag.Int("crash.containers", 150, "containers in TestCrashRestartSoak (make soak: 500)")

// TestCrashRestartSoak kills the daemon with SIGKILL five times at random
// moments while containers run on the local driver. Every container must
// end with exactly one final state (one in its record, one final-state event
// in the log), and its command (which appends its id to a shared file) must
// have run exactly once, or, for the fifth of them that fail their first
// attempt under restart_policy on-failure, exactly twice, as many times as
// their attempts say.
func TestCrashRestartSoak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	crashRestartSoak(t, "")
}

// TestCrashRestartSoakPostgres is the soak with the queue in PostgreSQL
// ($DISPATCH_TUI_STORE_URL): what a killed daemon had written is there
// when the next one starts.
func TestCrashRestartSoakPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	crashRestartSoak(t, pgtest.NewDatabase(t))
}

// crashRestartSoak runs the soak; storeURL, when set, is the daemon's
// PostgreSQL store.
func crashRestartSoak(t *testing.T, storeURL string) {
	state := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	server := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfgPath := writeDaemonConfig(t, state, daemonSettings{listen: server})
	var daemon *exec.Cmd
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	start := func() {
		daemon = exec.Command(binary, "--daemon", "--config", cfgPath)
		daemon.Env = append(os.Environ(), config.StoreURLEnv+"="+storeURL)
		daemon.Stderr = logFile
		if err := daemon.Start(); err != nil {
			t.Fatal(err)
		}
		logTail := func() string {
			b, _ := os.ReadFile(logPath)
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			return "its log ends:\n" + string(b)
		}
		wait.With{Seen: logTail}.Until(t, "daemon up", 30*time.Second, func() bool {
			resp, err := http.Get("http://" + server + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == 200
		})
	}
	t.Cleanup(func() {
		if daemon != nil && daemon.ProcessState == nil {
			daemon.Process.Kill()
			daemon.Wait()
		}
		destroyInstances(e2eConfig(state))
	})
	start()
	c := api.NewClient(server, e2eToken)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	n := *crashContainers
	retried := map[string]bool{} // by name: fails its first attempt, on-failure
	for i := 0; i < n; i++ {
		spec := queue.Spec{
			Command:            []string{"sh", "-c", `echo "$ID" >> "$RUNS"; sleep "$SECS"`},
			Env:                map[string]string{"ID": fmt.Sprint(i), "RUNS": runs, "SECS": fmt.Sprint(1 + rng.IntN(4))},
			Name:               fmt.Sprint(i),
			RuntimeConstraints: queue.Constraints{VCPUs: 1},
		}
		if rng.IntN(5) == 0 {
			// Exits 1 the first time it runs (its id is in the file once),
			// 0 the second.
			spec.Command = []string{"sh", "-c", `echo "$ID" >> "$RUNS"; sleep "$SECS"; [ "$(grep -cx "$ID" "$RUNS")" -ge 2 ]`}
			spec.RestartPolicy = queue.RestartOnFailure
			spec.MaxAttempts = 3
			retried[spec.Name] = true
		}
		if _, err := c.Submit(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 5; k++ {
		time.Sleep(time.Duration(1000+rng.IntN(6000)) * time.Millisecond) // a random moment
		daemon.Process.Signal(syscall.SIGKILL)
		daemon.Wait()
		start()
	}
	var all []view.Container
	wait.Until(t, "every container final", 5*time.Minute, func() bool {
		items, _, err := c.Containers(ctx, api.ListQuery{})
		if err != nil {
			return false
		}
		all = items
		for _, it := range items {
			if !it.State.Final() {
				return false
			}
		}
		return len(items) == n
	})
	finals := map[string]int{} // container id → final-state events
	for since := uint64(0); ; {
		evs, err := c.Events(ctx, since, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Kind == "state" && queue.State(e.Action).Final() {
				finals[e.Target]++
			}
		}
		since = evs[len(evs)-1].Seq
	}
	daemon.Process.Signal(syscall.SIGTERM)
	daemon.Wait()

	data, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, l := range strings.Fields(string(data)) {
		lines[l]++
	}
	defer func() {
		if t.Failed() {
			dumpWarnings(t, logPath)
		}
	}()
	for _, it := range all {
		if f := finals[it.ID]; f != 1 {
			t.Errorf("container %s has %d final-state events, want 1", it.Name, f)
		}
		if it.State != queue.Complete {
			t.Errorf("container %s ended %s (%s), want Complete", it.Name, it.State, it.Reason)
			continue
		}
		if got := lines[it.Name]; got != it.Attempts {
			t.Errorf("container %s ran %d times but records %d attempts", it.Name, got, it.Attempts)
		}
		want := 1
		if retried[it.Name] {
			want = 2 // failed once, retried by policy
		}
		if lines[it.Name] != want {
			t.Errorf("container %s ran %d times, want %d", it.Name, lines[it.Name], want)
		}
	}
	t.Logf("%d containers (%d retried by policy) Complete after five kill -9 restarts; %d runs in all", len(all), len(retried), len(strings.Fields(string(data))))
}

// dumpWarnings logs the daemon's warnings and errors, to explain a failure.
func dumpWarnings(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Log(err)
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			t.Log(l)
		}
	}
}
