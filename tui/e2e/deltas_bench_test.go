package e2e

// What an attached console costs, measured on the real binaries (BENCHMARKS.md):
// the console's memory after its first read of N queued containers, how
// soon a submit made with the CLI shows in it, and the daemon's CPU while
// the console watches a quiet queue. It runs only when asked for:
//
//	go test -run='^TestAttachedConsoleCost$' -count=1 -v -timeout=30m ./tui/e2e -console-bench=100000

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var consoleBench = flag.Int("console-bench", 0, "run TestAttachedConsoleCost with this many queued containers")

// TestAttachedConsoleCost measures an attached console (see the file's
// comment); it fails only if the console never shows the containers.
func TestAttachedConsoleCost(t *testing.T) {
	n := *consoleBench
	if n == 0 {
		t.Skip("a benchmark: -console-bench=N runs it")
	}
	needTmux(t)
	b := newBackendSetup(t)
	b.startDaemon(t)
	b.cli.run("pause", "--reason", "bench: keep the queue waiting")
	dir := t.TempDir()
	t0 := time.Now()
	const chunk = 100000
	for from := 0; from < n; from += chunk {
		var specs strings.Builder
		for i := from; i < min(n, from+chunk); i++ {
			fmt.Fprintf(&specs, "{\"name\":\"q-%d\",\"command\":[\"true\"],\"labels\":{\"team\":\"t%d\",\"pct\":\"%d\"}}\n", i, i%7, i%100)
		}
		file := filepath.Join(dir, fmt.Sprintf("specs-%d.jsonl", from))
		if err := os.WriteFile(file, []byte(specs.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		b.cli.run("submit", "-f", file)
	}
	t.Logf("submitted %d containers in %s", n, time.Since(t0).Round(time.Millisecond))
	daemon := childOf(t, os.Getpid(), "dispatch-tui")

	idle := 20 * time.Second
	cpu0 := cpuTime(t, daemon)
	time.Sleep(idle) // measuring: the daemon alone, for a fixed time
	alone := cpuTime(t, daemon) - cpu0

	tm := startTerm(t, b.sb, 140, 40, nil, binary, "--connect", "http://"+b.server, "--token", token, "--config", b.cfg)
	shows := func(k int) func(string) bool {
		return func(sc string) bool {
			m := tabCountRE.FindStringSubmatch(line(sc, 5))
			return m != nil && m[2] == strconv.Itoa(k)
		}
	}
	t1 := time.Now()
	tm.waitText("containers "+strconv.Itoa(n), 20*time.Minute)
	first := time.Since(t1)
	tm.keys("2") // the containers view
	tm.waitScreen(fmt.Sprintf("%d rows", n), time.Minute, shows(n))
	pane, err := tm.tmux("display-message", "-p", "-t", tm.name, "#{pane_pid}")
	if err != nil {
		t.Fatal(err)
	}
	ppid, err := strconv.Atoi(strings.TrimSpace(pane))
	if err != nil {
		t.Fatalf("pane pid %q: %v", pane, err)
	}
	console := childOf(t, ppid, "dispatch-tui")
	mem := procStatus(t, console)
	t.Logf("console attached to %d containers: first read shown after %s; RSS %s MiB (anonymous %s, file %s), peak %s MiB",
		n, first.Round(time.Millisecond), mem["VmRSS"], mem["RssAnon"], mem["RssFile"], mem["VmHWM"])

	// Idle: the console attached, the queue quiet.
	cpu0 = cpuTime(t, daemon)
	time.Sleep(idle) // measuring: the daemon with the console, for the same time
	attached := cpuTime(t, daemon) - cpu0
	t.Logf("daemon CPU over %s on a quiet queue: %s alone, %s with the console attached", idle, alone, attached)

	// Submits made with the CLI, each timed until the console shows it.
	var lat []time.Duration
	for i := range 20 {
		b.cli.submit("--name", fmt.Sprint("late-", i), "--", "true")
		at := time.Now()
		tm.waitScreen("the submit", time.Minute, shows(n+i+1))
		lat = append(lat, time.Since(at))
	}
	slices.Sort(lat)
	t.Logf("a CLI submit shown in the console after: median %s, max (p99 of %d) %s",
		lat[len(lat)/2].Round(time.Millisecond), len(lat), lat[len(lat)-1].Round(time.Millisecond))
	mem = procStatus(t, console)
	t.Logf("console after the submits: RSS %s MiB (anonymous %s, file %s), peak %s MiB", mem["VmRSS"], mem["RssAnon"], mem["RssFile"], mem["VmHWM"])

	// 1 % of the queue changed, 20 times: a kill by selector (label pct)
	// each, waited for in the header's count of the queued (the
	// cancelled past keep_finished are dropped, so their count stops).
	t2 := time.Now()
	cancelled := 0
	for k := range 20 {
		b.cli.run("kill", "-l", "pct="+strconv.Itoa(k))
		cancelled += n / 100
		if k < n%100 {
			cancelled++
		}
		want := fmt.Sprintf("%d Queued", n+20-cancelled)
		tm.waitScreen(want, 5*time.Minute, func(sc string) bool { return strings.Contains(sc, want) })
	}
	mem = procStatus(t, console)
	t.Logf("console after 20 refreshes with 1 %% of the queue changed each (%s): RSS %s MiB (anonymous %s, file %s), peak %s MiB",
		time.Since(t2).Round(time.Millisecond), mem["VmRSS"], mem["RssAnon"], mem["RssFile"], mem["VmHWM"])
}

// childOf returns the pid of a process named name below parent (a child,
// or a child's child: tmux runs the pane's command through a shell).
func childOf(t *testing.T, parent int, name string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		ppid int
		comm string
	}
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(st)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		f := strings.Fields(s[end+1:])
		if open < 0 || end < open || len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{ppid, s[open+1 : end]}
	}
	for pid, p := range procs {
		if p.comm != name {
			continue
		}
		for up, depth := p.ppid, 0; up > 1 && depth < 4; up, depth = procs[up].ppid, depth+1 {
			if up == parent {
				return pid
			}
		}
	}
	t.Fatalf("no process %s under %d", name, parent)
	return 0
}

// cpuTime is the user and system CPU pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(st)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the comm: state(0) ppid … utime(11) stime(12), in clock ticks
	// (100 a second on Linux).
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond
}

// procStatus is pid's /proc status in MiB for its memory lines (kB there).
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			kb, _ := strconv.Atoi(f[0])
			out[k] = strconv.Itoa(kb / 1024)
		}
	}
	return out
}
