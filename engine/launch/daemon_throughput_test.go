package launch

// The throughput benchmark of docs/design.md §9: the real
// binary runs as a daemon on the local driver, containers running `true`
// are submitted through its HTTP API, and the time from the first submit
// to the last Complete is measured. It runs only when asked for:
//
//	make bench-e2e   (go test -run='^TestDaemonThroughput$' ./engine/launch -throughput.containers=20000)
//
// Each submission path (one container per request, then batches) runs on
// a fresh daemon, and the machine's fork+exec floor (engine/forkfloor) is
// measured before the first run and after each: a rate is reported as a
// ratio to the mean of the floors on either side, the one figure that
// survives neighbours on a shared machine.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/forkfloor"
	"dispatch-tui/engine/queue"
)

var (
	throughputClients = flag.Int("throughput.clients", 16, "concurrent API clients submitting in TestDaemonThroughput")
	throughputTrace   = flag.String("throughput.trace", "", "write the Complete count over time to this CSV file (its name suffixed -single, -bulk) in TestDaemonThroughput")
	throughputProbe   = flag.Duration("throughput.probe", 100*time.Millisecond, "the daemon's probe_interval in TestDaemonThroughput (0 = the default)")
	throughputPaths   = flag.String("throughput.paths", "single,bulk", "how TestDaemonThroughput submits, each path timed in turn: single (one container per request), bulk (batches)")
	throughputBatch   = flag.Int("throughput.batch", 1000, "containers per request on the bulk path of TestDaemonThroughput")
	throughputBulkers = flag.Int("throughput.bulkclients", 1, "concurrent API clients on the bulk path of TestDaemonThroughput (1: batches one after another, as submit -f sends them)")
	throughputFloor   = flag.Duration("throughput.floor", 3*time.Second, "how long TestDaemonThroughput measures the fork+exec floor before and after each run")
	throughputStages  = flag.Bool("throughput.stages", false, "log how long containers spent in each state in TestDaemonThroughput (from the event log)")
	throughputResult  = flag.String("throughput.result", "", "write TestDaemonThroughput's summary lines (rate, floor, ratio) to this file")
	throughputStore   = flag.String("throughput.store", "", "postgres: TestDaemonThroughput runs each path on the embedded store, then again with the queue in PostgreSQL (a local server from pgtest), floors between")
)

// submitAll submits specs through the API, one call each, from clients
// concurrent connections.
func submitAll(c *api.Client, specs []queue.Spec, clients int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(specs) {
					return
				}
				if _, err := c.Submit(context.Background(), specs[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// submitBulk submits specs through the API in batches of batch, from
// clients concurrent connections.
func submitBulk(c *api.Client, specs []queue.Spec, batch, clients int) error {
	var chunks [][]queue.Spec
	for len(specs) > 0 {
		k := min(batch, len(specs))
		chunks = append(chunks, specs[:k])
		specs = specs[k:]
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range min(clients, len(chunks)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(chunks) {
					return
				}
				if _, err := c.SubmitBatch(context.Background(), chunks[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// completed returns how many containers the daemon counts Complete, and
// all its counts.
func completed(t *testing.T, c *api.Client) (int, map[queue.State]int) {
	t.Helper()
	s, err := c.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Containers[queue.Complete], s.Containers
}

func TestDaemonThroughput(t *testing.T) {
	n := *throughputN
	if n <= 0 {
		t.Skip("set -throughput.containers=N to run (make bench-e2e)")
	}
	paths, err := parsePaths(*throughputPaths)
	if err != nil {
		t.Fatal(err)
	}
	// The floor before the first run and after each one, in this process:
	// each run is compared with the mean of the floors on either side.
	stores, err := parseStores(*throughputStore)
	if err != nil {
		t.Fatal(err)
	}
	floors := []floorRun{measureFloor(t)}
	var runs []pathRun
	for _, p := range paths {
		for _, st := range stores {
			runs = append(runs, runPath(t, p, st, n))
			floors = append(floors, measureFloor(t))
		}
	}
	var lines []string
	for i, r := range runs {
		floor := (floors[i].rate + floors[i+1].rate) / 2
		floorCPU := (floors[i].cpuPerSpawn + floors[i+1].cpuPerSpawn) / 2
		lines = append(lines, fmt.Sprintf("%.0f containers/s, floor %.0f/s, ratio %.2f (%s submission, probe_interval %s%s; CPU per container %.2f ms, per floor spawn %.2f ms)",
			r.rate, floor, r.rate/floor, r.path, daemonProbeInterval(), storeNote(r.store), ms(r.cpuPerContainer), ms(floorCPU)))
	}
	for _, l := range lines {
		t.Log(l)
	}
	if *throughputResult != "" {
		if err := os.WriteFile(*throughputResult, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// The ways TestDaemonThroughput submits: one container per request, or
// batches in one request each.
const (
	pathSingle = "single"
	pathBulk   = "bulk"
)

func parsePaths(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		switch p = strings.TrimSpace(p); p {
		case pathSingle, pathBulk:
			out = append(out, p)
		case "":
		default:
			return nil, fmt.Errorf("-throughput.paths: unknown path %q (single, bulk)", p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-throughput.paths: name at least one of single, bulk")
	}
	return out, nil
}

// The stores TestDaemonThroughput runs on: the embedded one always, and
// PostgreSQL beside it with -throughput.store=postgres.
const (
	storeEmbedded = "embedded"
	storePostgres = "postgres"
)

func parseStores(s string) ([]string, error) {
	switch s {
	case "", storeEmbedded:
		return []string{storeEmbedded}, nil
	case storePostgres:
		return []string{storeEmbedded, storePostgres}, nil
	}
	return nil, fmt.Errorf("-throughput.store: unknown store %q (postgres, or empty for the embedded store alone)", s)
}

// storeNote names the store in a result line when it is not the default.
func storeNote(st string) string {
	if st == storePostgres {
		return ", queue in PostgreSQL"
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// newDirCost returns the wall time, in µs, to make one directory with
// three empty files, as a runner does for a container when its free pool is
// empty, on the file system of the runners' state (TMPDIR). On ext4
// without a journal it grows with the inodes freed in the last minutes
// (each allocation skips those; BENCHMARKS.md): the teardown of an earlier
// run shows up here and in the run's CPU per container.
func newDirCost(t *testing.T) float64 {
	t.Helper()
	const dirs = 256
	root := t.TempDir()
	t0 := time.Now()
	for i := range dirs {
		d := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"stdout", "stderr", "pid_start"} {
			f, err := os.Create(filepath.Join(d, name))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	return float64(time.Since(t0).Microseconds()) / dirs
}

// daemonProbeInterval is the probe_interval TestDaemonThroughput's daemons
// run with: -throughput.probe, or the config's default for 0.
func daemonProbeInterval() time.Duration {
	if *throughputProbe > 0 {
		return *throughputProbe
	}
	return config.Default().Cloud.ProbeInterval
}

// floorRun is one measurement of the fork+exec floor with the machine's CPU
// per spawn.
type floorRun struct {
	rate        float64
	cpuPerSpawn time.Duration
}

func measureFloor(t *testing.T) floorRun {
	t.Helper()
	busy0 := busyCPU(t)
	r, err := forkfloor.Measure(t.Context(), forkfloor.DefaultCommand, runtime.NumCPU(), *throughputFloor)
	busy := busyCPU(t) - busy0
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("floor: %s, %.2f ms of CPU (machine-wide) per spawn", r, ms(busy)/float64(max(r.Spawns, 1)))
	return floorRun{rate: r.Rate(), cpuPerSpawn: busy / time.Duration(max(r.Spawns, 1))}
}

// pathRun is the result of one timed run.
type pathRun struct {
	path            string
	store           string
	rate            float64
	cpuPerContainer time.Duration
}

// startDaemon starts the binary as a daemon with TestLocalThroughput's
// settings (four instances of a type big enough for every container at
// once, probed often) and returns a client for it and a function that
// stops it and destroys its instances (also run at cleanup).
func startDaemon(t *testing.T, st string) (*api.Client, func()) {
	t.Helper()
	state := t.TempDir()
	port := freeport.For(t)
	extra := "keep_finished = 0\n"
	if st == storePostgres {
		extra += fmt.Sprintf("\n[store]\nurl = %q\n", pgtest.NewDatabase(t))
	}
	cfgPath := writeDaemonConfig(t, state, daemonSettings{
		listen: fmt.Sprintf("127.0.0.1:%d", port), probeInterval: daemonProbeInterval().String(), maxProbes: 1000,
		vcpus: *throughputVCPUs, extra: extra,
	})
	daemon := exec.Command(binary, "--daemon", "--config", cfgPath)
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	daemon.Stderr = logFile
	if err := daemon.Start(); err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			daemon.Process.Signal(os.Interrupt)
			daemon.Wait()
			logFile.Close()
			// Leave nothing running: destroy the instances (kills containers).
			destroyInstances(e2eConfig(state))
			if t.Failed() {
				dumpWarnings(t, logPath)
			}
		})
	}
	t.Cleanup(stop)
	client := api.NewClient(fmt.Sprintf("127.0.0.1:%d", port), e2eToken)
	client.HTTP.Transport = &http.Transport{MaxIdleConnsPerHost: *throughputClients}
	client.HTTP.Timeout = 30 * time.Second
	wait.Until(t, "daemon API", 30*time.Second, func() bool {
		_, err := client.Summary(context.Background())
		return err == nil
	})
	t.Logf("daemon pid %d", daemon.Process.Pid)
	return client, stop
}

// runPath starts a daemon on store st, submits n containers running `true`
// the way path says and times them from the first submit to the last
// Complete.
func runPath(t *testing.T, path, st string, n int) pathRun {
	t.Helper()
	client, stop := startDaemon(t, st)
	defer stop()

	// Warm up: boot the instances and deploy the runner before timing.
	warm := make([]queue.Spec, 4)
	for i := range warm {
		warm[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: *throughputVCPUs}}
	}
	if err := submitAll(client, warm, len(warm)); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "warm-up containers Complete", 2*time.Minute, func() bool {
		done, _ := completed(t, client)
		return done == len(warm)
	})

	t.Logf("%s: a new container directory with its three files takes %.0f µs to make here (the runners make one whenever their pool of emptied ones runs dry)",
		path, newDirCost(t))

	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}}
	}
	calls0, notices0 := metricSum(t, client, metricProbes), metricSum(t, client, metricExitNotices)
	busy0 := busyCPU(t)
	t0 := time.Now()
	submitted := make(chan error, 1)
	var submitTook time.Duration
	go func() {
		var err error
		if path == pathBulk {
			err = submitBulk(client, specs, *throughputBatch, *throughputBulkers)
		} else {
			err = submitAll(client, specs, *throughputClients)
		}
		submitTook = time.Since(t0)
		submitted <- err
	}()
	want := len(warm) + n
	last, lastAt := 0, time.Now()
	deadline := time.Now().Add(time.Duration(n)*20*time.Millisecond + time.Minute)
	var progress []sample
	for {
		done, s := completed(t, client)
		progress = append(progress, sample{at: time.Since(t0), done: done - len(warm),
			queued: s[queue.Queued], locked: s[queue.Locked], running: s[queue.Running]})
		if done >= want {
			break
		}
		if done != last {
			last, lastAt = done, time.Now()
		}
		if time.Now().After(deadline) || time.Since(lastAt) > 30*time.Second {
			t.Fatalf("%s: stuck at %d of %d Complete after %s: %v", path, done-len(warm), n, time.Since(t0).Round(time.Millisecond), s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(t0)
	busy := busyCPU(t) - busy0
	calls, notices := metricSum(t, client, metricProbes), metricSum(t, client, metricExitNotices)
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	_, s := completed(t, client)
	how := fmt.Sprintf("%d clients, one container per request", *throughputClients)
	if path == pathBulk {
		how = fmt.Sprintf("%d client(s), %d containers per request", *throughputBulkers, *throughputBatch)
	}
	r := pathRun{path: path, store: st, rate: float64(n) / took.Seconds(), cpuPerContainer: busy / time.Duration(n)}
	t.Logf("%s: %d containers submitted through the API (%s) → Complete in %s (submits took %s): %.0f containers/s, %.2f ms of CPU (machine-wide) per container",
		path, n, how, took.Round(time.Millisecond), submitTook.Round(time.Millisecond), r.rate, ms(r.cpuPerContainer))
	if *throughputTrace != "" {
		var b strings.Builder
		b.WriteString("seconds,complete,queued,locked,running\n")
		for _, p := range progress {
			fmt.Fprintf(&b, "%.3f,%d,%d,%d,%d\n", p.at.Seconds(), p.done, p.queued, p.locked, p.running)
		}
		file := strings.TrimSuffix(*throughputTrace, ".csv") + "-" + path + ".csv"
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%s: %.3f probes (runner list of a whole instance) per container", path, (calls-calls0)/float64(n))
	t.Logf("%s: %.3f exit notices (announced by runner watch) per container", path, (notices-notices0)/float64(n))
	if rate, at, ok := slowestWindow(progress, n, time.Second); ok {
		t.Logf("%s: sustained: the slowest 1 s between 5 %% and 95 %% Complete ran %.0f containers/s (from %s)", path, rate, at.Round(time.Millisecond))
	}
	for _, st := range []queue.State{queue.Cancelled, queue.Queued, queue.Locked, queue.Running} {
		if c := s[st]; c > 0 {
			t.Errorf("%s: %d containers %s", path, c, st)
		}
	}
	if *throughputStages {
		logStages(t, client, path)
	}
	return r
}

// Counters read from the daemon's /metrics (metricSum).
const (
	// Probes: each lists every container of its instance, so their number
	// is what a run's list cost scales with.
	metricProbes = "dispatch_tui_probes_total"
	// Exits the runners' watches announced (docs/design.md §6): per
	// container, the fraction not left for a probe to find.
	metricExitNotices = "dispatch_tui_exit_notices_total"
)

// metricSum reads the daemon's /metrics and returns the sum of name's
// samples over all their labels.
func metricSum(t *testing.T, c *api.Client, name string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.BaseURL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v", resp.Status, err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		sample, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		if sample == name || strings.HasPrefix(sample, name+"{") {
			sum += v
		}
	}
	return sum
}

// logStages logs the median and 90th percentile of the time containers
// spent from submit to Locked, Locked to Running and Running to Complete,
// from the daemon's event log: where a container's round trip goes.
func logStages(t *testing.T, c *api.Client, path string) {
	t.Helper()
	at := map[string]map[string]time.Time{}
	var since uint64
	for {
		evs, err := c.Events(context.Background(), since, api.MaxListLimit)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			since = ev.Seq
			if (ev.Kind == "verb" && ev.Action == "submit") || ev.Kind == "state" {
				if at[ev.Target] == nil {
					at[ev.Target] = map[string]time.Time{}
				}
				at[ev.Target][ev.Action] = ev.Time
			}
		}
		if len(evs) < api.MaxListLimit {
			break
		}
	}
	stages := []struct{ from, to string }{{"submit", "Locked"}, {"Locked", "Running"}, {"Running", "Complete"}}
	for _, st := range stages {
		var ds []time.Duration
		for _, m := range at {
			a, ok1 := m[st.from]
			b, ok2 := m[st.to]
			if ok1 && ok2 {
				ds = append(ds, b.Sub(a))
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		t.Logf("%s: %s → %s: median %s, 90th percentile %s (%d containers)", path, st.from, st.to,
			ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)*9/10].Round(time.Millisecond), len(ds))
	}
}

// sample is how many of the timed containers were Complete at a moment
// (time since the first submit).
type sample struct {
	at   time.Duration
	done int
	// The daemon's counts at that moment (for the trace).
	queued, locked, running int
}

// slowestWindow returns the lowest completion rate over any stretch of at
// least window between the samples where 5 % and 95 % of n were Complete
// (the start-up and the last stragglers left out), and where that stretch
// began. ok is false when that part of the run is shorter than window.
func slowestWindow(samples []sample, n int, window time.Duration) (rate float64, from time.Duration, ok bool) {
	var mid []sample
	for _, s := range samples {
		if s.done*20 >= n && s.done*20 <= n*19 {
			mid = append(mid, s)
		}
	}
	j := 0
	for i := range mid {
		for j < len(mid) && mid[j].at-mid[i].at < window {
			j++
		}
		if j == len(mid) {
			break
		}
		r := float64(mid[j].done-mid[i].done) / (mid[j].at - mid[i].at).Seconds()
		if !ok || r < rate {
			rate, from, ok = r, mid[i].at, true
		}
	}
	return rate, from, ok
}

// busyCPU is the CPU time the whole machine has spent so far, from
// /proc/stat (user, nice, system, irq and softirq; not idle, iowait or
// time stolen by the hypervisor). Throughput on a shared machine swings
// with its neighbours; CPU per container says what the work costs.
func busyCPU(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		t.Fatalf("/proc/stat: %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q", line)
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// samples makes samples from pairs of milliseconds and Complete counts.
func samples(msAndDone ...int) []sample {
	var out []sample
	for i := 0; i+1 < len(msAndDone); i += 2 {
		out = append(out, sample{at: time.Duration(msAndDone[i]) * time.Millisecond, done: msAndDone[i+1]})
	}
	return out
}

func TestSlowestWindow(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	tests := []struct {
		name    string
		samples []sample
		n       int
		rate    float64
		from    time.Duration
		ok      bool
	}{
		{"too short", samples(0, 0, 500, 50, 900, 100), 100, 0, 0, false},
		{"steady", samples(0, 0, 500, 10, 1000, 20, 1500, 30, 2000, 40, 2500, 50), 50, 20, ms(500), true},
		{"a stall in the middle", samples(0, 10, 1000, 40, 2000, 45, 3000, 90, 4000, 100), 100, 5, ms(1000), true},
		{"ramp and tail left out", samples(0, 0, 1000, 1, 2000, 10, 3000, 60, 4000, 90, 5000, 99, 6000, 100), 100, 30, ms(3000), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rate, from, ok := slowestWindow(tc.samples, tc.n, time.Second)
			if ok != tc.ok || rate != tc.rate || from != tc.from {
				t.Fatalf("got %v %s %v, want %v %s %v", rate, from, ok, tc.rate, tc.from, tc.ok)
			}
		})
	}
}
