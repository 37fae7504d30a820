package e2e

// What attached consoles cost, measured on the real binaries as issue 32's
// acceptance states it (BENCHMARKS.md): a daemon on the fake driver with
// instances running (N/100 by default: 10,000 at a million) and N queued
// containers, two consoles --connect'ed in two tmux sessions, 1 % of the
// queue changed every second while 20 CLI submits are each timed, from the
// CLI's start, until both consoles show them; the RSS of the three
// processes sampled from /proc all along, and the daemon's CPU on the
// quiet queue. It runs only when asked for (make test does not):
//
//	go test -run='^TestAttachedConsoleCost$' -count=1 -v -timeout=30m ./tui/e2e -console-bench=100000
//	DISPATCH_TUI_TEST_BINARY=$PWD/bin/dispatch-tui go test -run='^TestAttachedConsoleCost$' -count=1 -v -timeout=150m ./tui/e2e -console-bench=1000000

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest/wait"
)

var (
	consoleBench   = flag.Int("console-bench", 0, "run TestAttachedConsoleCost with this many queued containers")
	benchInstances = flag.Int("console-bench.instances", -1, "TestAttachedConsoleCost's running instances (-1: a hundredth of -console-bench)")
	benchPaused    = flag.Bool("console-bench.paused", false, "TestAttachedConsoleCost pauses the scheduler once the instances run (by default it runs, at quota)")
	benchFiles     = flag.Bool("console-bench.files", false, "TestAttachedConsoleCost submits its queue with submit -f, files of 100,000 (by default through the API, batches of 5,000)")
	benchProfile   = flag.String("console-bench.profile", "", "TestAttachedConsoleCost starts the daemon with --profile `DIR` and cuts its CPU profile at each phase (cpu-N.pprof is the Nth phase the log names)")
	benchChurn     = flag.Duration("console-bench.churn", time.Minute, "how long TestAttachedConsoleCost changes 1 % of the queue a second (at least the 20 CLI submits, one every 3 s)")
)

// benchSubmits is how many CLI submits are timed during the churn, one
// every benchSubmitEvery.
const (
	benchSubmits     = 20
	benchSubmitEvery = 3 * time.Second
	benchIdle        = 20 * time.Second // the daemon's CPU is read over this
)

// TestAttachedConsoleCost measures attached consoles (see the file's
// comment); it fails only if the daemon or the consoles never get there.
func TestAttachedConsoleCost(t *testing.T) {
	n := *consoleBench
	if n == 0 {
		t.Skip("a benchmark: -console-bench=N runs it")
	}
	needTmux(t)
	inst := *benchInstances
	if inst < 0 {
		inst = n / churnGroups
	}
	b := newFleetSetup(t, inst)
	var profDir string
	if *benchProfile != "" {
		dir, err := filepath.Abs(*benchProfile) // the daemon runs in its sandbox's directory
		if err != nil {
			t.Fatal(err)
		}
		profDir = dir
		b.args = append(b.args, "--profile", dir)
	}
	b.startDaemon(t)
	c := api.NewClient("http://"+b.server, token)
	daemon := childOf(t, os.Getpid(), "dispatch-tui")
	rss := newRSSSampler(3 * time.Second)
	t.Cleanup(rss.stop)
	rss.watch("daemon", daemon)
	phases := 0
	var consoles []int
	consolePhase := 0 // the phase of the consoles' cpu-0.pprof: their first reads
	phase := func(name string) {
		rss.begin(name)
		phases++
		if profDir != "" {
			cutProfile(t, daemon, profDir, phases, name)
			for i, pid := range consoles {
				cutProfile(t, pid, filepath.Join(profDir, fmt.Sprint("console-", i+1)), phases-consolePhase, name)
			}
		}
	}

	phase("instances")
	took := submitCopies(t, c, inst, func(int) string {
		return `{"name":"fleet","command":["run-forever"],"runtime_constraints":{"vcpus":1,"ram":536870912}}`
	})
	waitRunning(t, c, inst, 40*time.Minute)
	t.Logf("%d instances running after %s (submitted in %s; load %s)", inst, rss.since("instances"), took.Round(time.Millisecond), loadAvg())
	if *benchPaused {
		b.cli.run("pause", "--reason", "bench: keep the queue waiting")
	}

	phase("queue submitted")
	queued := func(i int) string {
		return fmt.Sprintf(`{"name":"q","command":["true"],"labels":{"pct":"%d"},"runtime_constraints":{"vcpus":1,"ram":536870912}}`, i%churnGroups)
	}
	how := fmt.Sprintf("through the API in batches of %d", benchBatch)
	if *benchFiles {
		how, took = "with submit -f, files of 100,000", submitFiles(t, b, n, queued)
	} else {
		took = submitCopies(t, c, n, queued)
	}
	total := n + inst
	t.Logf("%d containers submitted %s in %s (%.0f a second; load %s); daemon %s",
		n, how, took.Round(time.Millisecond), float64(n)/took.Seconds(), loadAvg(), memLine(t, daemon))

	phase("quiet, no console")
	alone := cpuOver(t, daemon)

	// Two consoles, each in its tmux session, read the queue at once.
	phase("first reads")
	var tms []*term
	for i := range 2 {
		args := []string{"--connect", "http://" + b.server, "--token", token, "--config", b.cfg}
		if profDir != "" {
			args = append(args, "--profile", filepath.Join(profDir, fmt.Sprint("console-", i+1)))
		}
		tms = append(tms, startTerm(t, b.sb, 140, 40, nil, append([]string{binary}, args...)...))
	}
	consolePhase = phases
	t1 := time.Now()
	header := untilEach(t, tms, fmt.Sprintf("the header's containers %d", total), 30*time.Minute, t1,
		func(sc string) bool { return strings.Contains(sc, "containers "+strconv.Itoa(total)) })
	for i, tm := range tms {
		tm.keys("2") // the containers view
		consoles = append(consoles, paneProcess(t, tm))
		rss.watch(fmt.Sprint("console", i+1), consoles[i])
	}
	rows := untilEach(t, tms, fmt.Sprintf("%d rows", total), 10*time.Minute, t1, tabTotal(total))
	for i, pid := range consoles {
		t.Logf("console %d: the header after %s, the rows after %s; %s", i+1,
			header[i].Round(time.Millisecond), rows[i].Round(time.Millisecond), memLine(t, pid))
	}
	t.Logf("daemon after the two first reads: %s", memLine(t, daemon))

	phase("quiet, two consoles")
	attached := cpuOver(t, daemon)
	t.Logf("daemon CPU over %s on a quiet queue: %s alone, %s with the two consoles attached (load %s)", benchIdle, alone, attached, loadAvg())

	// The churn, and the CLI timed through it.
	phase("churn and CLI submits")
	ch := startChurn(c)
	t2 := time.Now()
	pace := time.NewTicker(benchSubmitEvery)
	defer pace.Stop()
	// Each submit is timed from the CLI's start: the operator's wait
	// includes the command's own.
	lat := make([][]time.Duration, len(tms))
	var slowerLat, submitted, cli, afterCLI []time.Duration // the later console's, when each CLI began (after t2), its own time, the later console's after it
	for i := range benchSubmits {
		<-pace.C // pacing: the submits spread over the churn
		start := time.Now()
		b.cli.submit("--name", fmt.Sprint("late-", i), "--", "true")
		cli = append(cli, time.Since(start))
		submitted = append(submitted, start.Sub(t2))
		ds := untilEach(t, tms, fmt.Sprintf("submit %d's row", i+1), 2*time.Minute, start, tabTotal(total+i+1))
		for k, d := range ds {
			lat[k] = append(lat[k], d)
		}
		slowerLat = append(slowerLat, slices.Max(ds))
		afterCLI = append(afterCLI, slices.Max(ds)-cli[i])
	}
	for time.Since(t2) < *benchChurn {
		<-pace.C // pacing: the churn runs its full time
	}
	res := ch.stop()
	t.Logf("churn: %s (load %s)", res, loadAvg())
	var all []time.Duration
	for k, l := range lat {
		t.Logf("console %d: a CLI submit shown after %s", k+1, quantiles(l))
		all = append(all, l...)
	}
	t.Logf("both consoles: a CLI submit shown after %s, from the CLI's start; the slowest (on both, after the churn began at %s): %s; the CLI itself took %s; on both after the CLI returned: %s",
		quantiles(all), res.started.Format("15:04:05.000"), slowest(slowerLat, submitted, 3), quantiles(cli), quantiles(afterCLI))
	for i, pid := range consoles {
		t.Logf("console %d after the churn: %s", i+1, memLine(t, pid))
	}
	t.Logf("daemon after the churn: %s", memLine(t, daemon))
	sum, err := c.Summary(context.Background())
	if err != nil {
		t.Fatalf("summary after the churn: %v", err)
	}
	t.Logf("at the end: instances %v, containers %v, at quota %v, paused %v", sum.Instances, sum.Containers, sum.AtQuota, sum.Paused)
	phase("after the churn")
	rss.stop()
	t.Logf("sampled every 3 s, by phase (CPU in cores):\n%s", rss.report())
}

// tabTotal is the condition that the tab bar counts total rows.
func tabTotal(total int) func(string) bool {
	return func(sc string) bool {
		m := tabCountRE.FindStringSubmatch(line(sc, 5))
		return m != nil && m[2] == strconv.Itoa(total)
	}
}

// untilEach polls every console's screen until cond holds on it, and
// returns how long after start each one first did.
func untilEach(t *testing.T, tms []*term, what string, timeout time.Duration, start time.Time, cond func(string) bool) []time.Duration {
	t.Helper()
	got := make([]time.Duration, len(tms))
	seen := func() string {
		var b strings.Builder
		for i, tm := range tms {
			fmt.Fprintf(&b, "\nconsole %d (shown after %s):\n%s", i+1, got[i], tm.last)
		}
		return b.String()
	}
	wait.With{Seen: seen}.Until(t, what+" on every console", timeout, func() bool {
		all := true
		for i, tm := range tms {
			if got[i] != 0 {
				continue
			}
			if cond(tm.capture()) {
				got[i] = time.Since(start)
			} else {
				all = false
			}
		}
		return all
	})
	return got
}

// cutProfile asks the process started with --profile dir (the daemon or
// a console) to begin its CPU profile number n (profile.go: the Nth
// SIGUSR1), for the phase named.
func cutProfile(t *testing.T, pid int, dir string, n int, name string) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatalf("cut the profile in %s at %q: %v", dir, name, err)
	}
	t.Logf("profile: phase %q is %s/cpu-%d.pprof (heap-%d.pprof at its start)", name, dir, n, n)
}

// cpuOver is the CPU pid uses over benchIdle.
func cpuOver(t *testing.T, pid int) time.Duration {
	t.Helper()
	c0 := cpuTime(t, pid)
	time.Sleep(benchIdle) // measuring: the daemon over a fixed time
	return cpuTime(t, pid) - c0
}

// slowest says the n longest of ds with when each began (at[i], after a
// common start), longest first.
func slowest(ds, at []time.Duration, n int) string {
	idx := make([]int, len(ds))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ds[b], ds[a]) })
	var parts []string
	for _, i := range idx[:min(n, len(idx))] {
		parts = append(parts, fmt.Sprintf("%s at +%s", ds[i].Round(time.Millisecond), at[i].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// quantiles says p50, p99 and max of ds, and how many.
func quantiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return "no samples"
	}
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond) }
	return fmt.Sprintf("p50 %s, p99 %s, max %s (%d)", q(0.5), q(0.99), q(1), len(s))
}
