package launch

// The exit-latency benchmark of issue 26 (BENCHMARKS.md): the real binary as
// a daemon on the local driver (real SSH), at the default probe_interval,
// with warm instances. It runs only when asked for:
//
//	go test -run='^TestExitLatency$' ./engine/launch -exitlatency.containers=1000
//
// Latency: containers of `sleep 0.2`, from the process's exit (the
// finished_at its runner recorded) to the dispatcher recording it Complete
// (the time of its Complete state event, written by the pass that recorded
// it), p50 and p99. Utilization: containers of `sleep 2` filling every slot
// of the warm instances several times over, the fraction of the slots'
// time from the first start to the last exit spent running containers.
// Both are measured here, not asserted: a test has no timed assertion.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
)

var (
	exitLatencyN     = flag.Int("exitlatency.containers", 0, "run TestExitLatency with this many `sleep 0.2` containers (0 = skip)")
	exitLatencySlots = flag.Int("exitlatency.slots", 16, "containers each of TestExitLatency's four instances runs at once")
	exitLatencyUtil  = flag.Int("exitlatency.waves", 5, "TestExitLatency's utilization run: `sleep 2` containers to fill every slot this many times (0 = skip)")
	exitLatencyProbe = flag.Duration("exitlatency.probe", 0, "the daemon's probe_interval in TestExitLatency (0 = the default)")
	exitLatencyOut   = flag.String("exitlatency.result", "", "write TestExitLatency's summary lines to this file")
	exitLatencyLog   = flag.String("exitlatency.log", "", "keep TestExitLatency's daemon log in this file")
)

// exitInstances is how many instances the daemon's config allows
// (writeDaemonConfig's max_instances): all of them are warmed.
const exitInstances = 4

func TestExitLatency(t *testing.T) {
	n := *exitLatencyN
	if n <= 0 {
		t.Skip("set -exitlatency.containers=N to run")
	}
	probe := *exitLatencyProbe
	if probe <= 0 {
		probe = config.Default().Cloud.ProbeInterval
	}
	slots := *exitLatencySlots
	client := startExitDaemon(t, probe, slots)
	var lines []string

	notices0 := metricSum(t, client, metricExitNotices)
	lat := runTimed(t, client, n, []string{"sleep", "0.2"})
	notices := metricSum(t, client, metricExitNotices) - notices0
	ds := make([]time.Duration, 0, len(lat))
	for _, r := range lat {
		ds = append(ds, r.recorded.Sub(r.finished))
	}
	slices.Sort(ds)
	lines = append(lines, fmt.Sprintf("exit → recorded Complete: p50 %s, p99 %s, max %s (%d containers of sleep 0.2, %d at a time; probe_interval %s)",
		pct(ds, 50), pct(ds, 99), ds[len(ds)-1].Round(time.Millisecond), len(ds), exitInstances*slots, probe),
		fmt.Sprintf("exits announced by runner watch: %.0f of %d (%.1f %%); the rest were found by a list", notices, n, 100*notices/float64(n)))

	if waves := *exitLatencyUtil; waves > 0 {
		m := waves * exitInstances * slots
		runs := runTimed(t, client, m, []string{"sleep", "2"})
		var busy time.Duration
		first, last := runs[0].started, runs[0].finished
		for _, r := range runs {
			busy += r.finished.Sub(r.started)
			first = minTime(first, r.started)
			if r.finished.After(last) {
				last = r.finished
			}
		}
		span := last.Sub(first)
		lines = append(lines, fmt.Sprintf("utilization: %.2f of %d slots × %s busy running containers (%d containers of sleep 2; probe_interval %s)",
			float64(busy)/float64(time.Duration(exitInstances*slots)*span), exitInstances*slots, span.Round(time.Millisecond), m, probe))
	}
	for _, l := range lines {
		t.Log(l)
	}
	if *exitLatencyOut != "" {
		if err := os.WriteFile(*exitLatencyOut, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// pct is the p-th percentile of sorted ds.
func pct(ds []time.Duration, p int) time.Duration {
	i := min(len(ds)-1, (len(ds)*p+99)/100-1)
	return ds[max(i, 0)].Round(time.Millisecond)
}

// startExitDaemon starts the binary as a daemon with probe_interval probe
// and four instances of slots vCPUs, and waits until all four are warm.
func startExitDaemon(t *testing.T, probe time.Duration, slots int) *api.Client {
	t.Helper()
	state := t.TempDir()
	port := freeport.For(t)
	cfgPath := writeDaemonConfig(t, state, daemonSettings{
		listen: fmt.Sprintf("127.0.0.1:%d", port), probeInterval: probe.String(), vcpus: slots,
	})
	client := startDaemonAt(t, state, cfgPath, port)
	warm := make([]queue.Spec, exitInstances)
	for i := range warm {
		warm[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: slots}}
	}
	if _, err := client.SubmitBatch(context.Background(), warm); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "warm-up containers Complete", 2*time.Minute, func() bool {
		done, _ := completed(t, client)
		return done == len(warm)
	})
	return client
}

// startDaemonAt starts the daemon on cfgPath, stopped (its instances
// destroyed) at cleanup, and returns a client once its API answers.
func startDaemonAt(t *testing.T, state, cfgPath string, port int) *api.Client {
	t.Helper()
	daemon := exec.Command(binary, "--daemon", "--config", cfgPath)
	logPath := t.TempDir() + "/daemon.log"
	if *exitLatencyLog != "" {
		logPath = *exitLatencyLog
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	daemon.Stderr = logFile
	if err := daemon.Start(); err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemon.Process.Signal(os.Interrupt)
		daemon.Wait()
		logFile.Close()
		destroyInstances(e2eConfig(state))
		if t.Failed() {
			dumpWarnings(t, logPath)
		}
	})
	client := api.NewClient(fmt.Sprintf("127.0.0.1:%d", port), e2eToken)
	client.HTTP.Timeout = 30 * time.Second
	wait.Until(t, "daemon API", 30*time.Second, func() bool {
		_, err := client.Summary(context.Background())
		return err == nil
	})
	return client
}

// timedRun is one container's start and exit (its runner's times) and when
// the dispatcher recorded it Complete.
type timedRun struct {
	started, finished, recorded time.Time
}

// runTimed submits n containers running cmd (one vCPU each), waits until
// all are Complete and returns their times.
func runTimed(t *testing.T, client *api.Client, n int, cmd []string) []timedRun {
	t.Helper()
	ctx := context.Background()
	done0, _ := completed(t, client)
	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: cmd, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}}
	}
	var ids []string
	for len(specs) > 0 {
		k := min(1000, len(specs))
		cs, err := client.SubmitBatch(ctx, specs[:k])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		specs = specs[k:]
	}
	wait.Until(t, fmt.Sprintf("%d containers of %v Complete", n, cmd), 30*time.Minute, func() bool {
		done, s := completed(t, client)
		if s[queue.Cancelled] > 0 {
			t.Fatalf("containers Cancelled: %v", s)
		}
		return done-done0 >= n
	})
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	recorded := map[string]time.Time{}
	var since uint64
	for {
		evs, err := client.Events(ctx, since, api.MaxListLimit)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			since = ev.Seq
			if ev.Kind == "state" && ev.Action == string(queue.Complete) && want[ev.Target] {
				recorded[ev.Target] = ev.Time
			}
		}
		if len(evs) < api.MaxListLimit {
			break
		}
	}
	out := make([]timedRun, 0, n)
	for _, id := range ids {
		c, err := client.Container(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		at, ok := recorded[id]
		if !ok || c.State != queue.Complete || c.FinishedAt.IsZero() {
			t.Fatalf("%s: %s, finished %s, Complete event %v", id, c.State, c.FinishedAt, ok)
		}
		out = append(out, timedRun{started: c.StartedAt, finished: c.FinishedAt, recorded: at})
	}
	return out
}
