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
	"dispatch-tui/engine/enginetest/freeport"
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
	server := fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
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
	// Each run also appends its id and start time to a second file, to
	// explain a failure (the checker counts the first file's lines).
	const mark = `echo "$ID" >> "$RUNS"; echo "$ID $(date -u +%H:%M:%S.%N)" >> "$RUNS.t"; `
	for i := 0; i < n; i++ {
		spec := queue.Spec{
			Command:            []string{"sh", "-c", mark + `sleep "$SECS"`},
			Env:                map[string]string{"ID": fmt.Sprint(i), "RUNS": runs, "SECS": fmt.Sprint(1 + rng.IntN(4))},
			Name:               fmt.Sprint(i),
			RuntimeConstraints: queue.Constraints{VCPUs: 1},
		}
		if rng.IntN(5) == 0 {
			// Exits 1 the first time it runs (its id is in the file once),
			// 0 the second.
			spec.Command = []string{"sh", "-c", mark + `sleep "$SECS"; [ "$(grep -cx "$ID" "$RUNS")" -ge 2 ]`}
			spec.RestartPolicy = queue.RestartOnFailure
			spec.MaxAttempts = 3
			retried[spec.Name] = true
		}
		if _, err := c.Submit(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	var kills []string // when each daemon was killed and the next was up
	for k := 0; k < 5; k++ {
		time.Sleep(time.Duration(1000+rng.IntN(6000)) * time.Millisecond) // a random moment
		daemon.Process.Signal(syscall.SIGKILL)
		daemon.Wait()
		killed := time.Now().UTC()
		start()
		kills = append(kills, fmt.Sprintf("killed %s, next up %s", killed.Format(soakTime), time.Now().UTC().Format(soakTime)))
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
	finals := map[string]int{}           // container id → final-state events
	history := map[string][]view.Event{} // container id → its events
	for since := uint64(0); ; {
		evs, err := c.Events(ctx, since, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			history[e.Target] = append(history[e.Target], e)
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
		if problems := checkSoakContainer(it, finals[it.ID], lines[it.Name], retried[it.Name]); len(problems) > 0 {
			for _, p := range problems {
				t.Error(p)
			}
			explainContainer(t, it, history[it.ID], runs+".t", logPath, kills)
		}
	}
	t.Logf("%d containers (%d retried by policy) Complete after five kill -9 restarts; %d runs in all", len(all), len(retried), len(strings.Fields(string(data))))
}

// checkSoakContainer says what is wrong with container c at the end of the
// soak: finals is its final-state events, runs how often its command ran,
// retried whether it fails its first attempt under on-failure.
func checkSoakContainer(c view.Container, finals, runs int, retried bool) []string {
	var problems []string
	if finals != 1 {
		problems = append(problems, fmt.Sprintf("container %s has %d final-state events, want 1", c.Name, finals))
	}
	if c.State != queue.Complete {
		return append(problems, fmt.Sprintf("container %s ended %s (%s), want Complete", c.Name, c.State, c.Reason))
	}
	if runs != c.Attempts {
		problems = append(problems, fmt.Sprintf("container %s ran %d times but records %d attempts", c.Name, runs, c.Attempts))
	}
	want := 1
	if retried {
		want = 2 // failed once, retried by policy
	}
	if runs != want {
		problems = append(problems, fmt.Sprintf("container %s ran %d times, want %d", c.Name, runs, want))
	}
	return problems
}

// soakTime is how the soak's failure reports print times.
const soakTime = "15:04:05.000"

// explainContainer logs what is known of container c, which failed the
// soak's checks: its events, its runs with their start times, the daemon's
// log lines naming it, and when the daemons were killed.
func explainContainer(t *testing.T, c view.Container, events []view.Event, timesPath, logPath string, kills []string) {
	t.Logf("container %s (%s): %s, attempts %d, on %s", c.Name, c.ID, c.State, c.Attempts, c.InstanceID)
	for _, e := range events {
		t.Logf("  event %s %s %s %s %q", e.Time.UTC().Format(soakTime), e.Actor, e.Kind, e.Action, e.Reason)
	}
	if b, err := os.ReadFile(timesPath); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if id, at, ok := strings.Cut(l, " "); ok && id == c.Name {
				t.Logf("  run started %s", at)
			}
		}
	}
	for _, k := range kills {
		t.Logf("  daemon %s", k)
	}
	if b, err := os.ReadFile(logPath); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, c.ID) {
				t.Logf("  log %s", l)
			}
		}
	}
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
