package e2e

// The daemon TestAttachedConsoleCost measures: the built binary on the
// fake driver, brought to its instances and its queue through the API
// (as tools/daemon-instances.sh and tools/daemon-idle.sh do by hand).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/wait"
	engview "dispatch-tui/engine/view" // the package has a view() of its own
)

// benchBatch is how many containers one submit carries: the most one
// request takes.
const benchBatch = api.MaxBatchItems

// churnGroups is how many values the queue's "pct" label takes: a
// selector on one of them is 1 % of the queue.
const churnGroups = 100

// newFleetSetup is a backendSetup whose daemon runs on the fake driver
// with room for instances instances of one vCPU, created and probed as
// fast as the in-memory cloud lets (the limits of the run that brought a
// daemon to 10,000, BENCHMARKS.md), everything else at its default —
// memory_limit included.
func newFleetSetup(t *testing.T, instances int) *backendSetup {
	t.Helper()
	sb := newSandbox(t)
	state := t.TempDir()
	server := fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
	config := func(server string) string {
		cfg := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(cfg, []byte(enginetest.FleetConfig(state, server, token, instances)), 0o600); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	return &backendSetup{sb: sb, cfg: config(server), server: server, cli: newCLI(t, sb, server, token), config: config}
}

// submitCopies submits n containers of spec(i) in batches of benchBatch
// and says how long it took. spec(i) must repeat every benchBatch, so one
// batch is encoded once.
func submitCopies(t *testing.T, c *api.Client, n int, spec func(i int) string) time.Duration {
	t.Helper()
	batch := make([]json.RawMessage, benchBatch)
	for i := range batch {
		batch[i] = json.RawMessage(spec(i))
	}
	start, logged := time.Now(), time.Now()
	for done := 0; done < n; done += benchBatch {
		part := batch[:min(benchBatch, n-done)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		_, err := c.SubmitBatchJSON(ctx, part)
		cancel()
		if err != nil {
			t.Fatalf("submit of containers %d–%d: %v", done, done+len(part), err)
		}
		if time.Since(logged) > 30*time.Second {
			t.Logf("… %d of %d submitted after %s (load %s)", done+len(part), n, time.Since(start).Round(time.Second), loadAvg())
			logged = time.Now()
		}
	}
	return time.Since(start)
}

// submitFiles is submitCopies through the CLI's submit -f, a file of
// 100,000 specs at a time (the way this benchmark submitted before), to
// compare the two.
func submitFiles(t *testing.T, b *backendSetup, n int, spec func(i int) string) time.Duration {
	t.Helper()
	dir := t.TempDir()
	const chunk = 100000
	start := time.Now()
	for from := 0; from < n; from += chunk {
		var specs strings.Builder
		for i := from; i < min(n, from+chunk); i++ {
			specs.WriteString(spec(i))
			specs.WriteByte('\n')
		}
		file := filepath.Join(dir, fmt.Sprintf("specs-%d.jsonl", from))
		if err := os.WriteFile(file, []byte(specs.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		b.cli.run("submit", "-f", file)
	}
	return time.Since(start)
}

// waitRunning waits until n instances are running, logging the ramp every
// 30 s (a summary can take seconds while thousands of instances boot).
func waitRunning(t *testing.T, c *api.Client, n int, timeout time.Duration) {
	t.Helper()
	var sum engview.Summary
	logged := time.Now()
	wait.With{Seen: func() string { return fmt.Sprintf("; instances: %v", sum.Instances) }}.Until(t,
		fmt.Sprintf("%d instances running", n), timeout, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := c.Summary(ctx)
			if err != nil {
				t.Logf("summary: %v", err)
				time.Sleep(time.Second) // polling: a daemon too busy to answer is asked less often
				return false
			}
			sum = s
			if time.Since(logged) > 30*time.Second {
				t.Logf("… instances %v (load %s)", sum.Instances, loadAvg())
				logged = time.Now()
			}
			if sum.Instances[engview.InstanceRunning] < n {
				time.Sleep(500 * time.Millisecond) // polling: a summary locks the pool; twice a second is enough
				return false
			}
			return true
		})
}

// loadAvg is the machine's one-minute load average, as /proc says it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := string(b)
	for i := range f {
		if f[i] == ' ' {
			return f[:i]
		}
	}
	return f
}
