//go:build linux

// The HA tests' checker: what every container's marker file, output and
// record, and the hosts themselves, must show at the end of a fault.

package sshhosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/queue"
)

// markedSpec's command writes a start line (its shell's pid, the time in
// nanoseconds) to its marker file and to the cluster's starts file, its
// name to its output, takes d, then writes an end line: each run leaves
// its span in the marker file.
func (he *haEnv) markedSpec(name string, d time.Duration) queue.Spec {
	return queue.Spec{
		Name: name,
		Command: []string{"sh", "-c",
			`now=$(date +%s%N); echo "start $$ $now" >> "$1"; echo "$3 $now" >> "$4"; echo "out $3"; sleep "$2"; echo "end $$ $(date +%s%N)" >> "$1"`,
			"sh", filepath.Join(he.markers, name), fmt.Sprint(d.Seconds()), name, he.startsFile()},
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
		MaxAttempts:        3,
	}
}

// startsFile is where every run of every marked container appends
// "NAME NANOSECONDS" as it starts: one file to read for the first start
// after a fault.
func (he *haEnv) startsFile() string { return filepath.Join(filepath.Dir(he.markers), "starts") }

// firstStartSince is how long after t the first run that started after t
// did (0: none yet), by the starts file.
func (he *haEnv) firstStartSince(t time.Time) time.Duration {
	b, err := os.ReadFile(he.startsFile())
	if err != nil {
		return 0
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	// Appended in about the order they started: look from the end.
	var first time.Duration
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) != 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		d := time.Unix(0, ns).Sub(t)
		if d <= -time.Minute {
			break
		}
		if d > 0 && (first == 0 || d < first) {
			first = d
		}
	}
	return first
}

// run is one run of a marked container: when it started and ended on
// the host's clock (end 0: it wrote no end line).
type run struct {
	pid        string
	start, end int64
}

// runsOf reads the runs of container name from its marker file.
func (he *haEnv) runsOf(name string) []run {
	b, err := os.ReadFile(filepath.Join(he.markers, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		he.t.Fatal(err)
	}
	var runs []run
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			he.t.Fatalf("marker of %s: bad line %q", name, line)
		}
		switch f[0] {
		case "start":
			runs = append(runs, run{pid: f[1], start: at})
		case "end":
			for i := range runs {
				if runs[i].pid == f[1] && runs[i].end == 0 {
					runs[i].end = at
				}
			}
		}
	}
	return runs
}

// check is the checker (docs/design.md §11): every container is final
// (Complete, exit 0), ran exactly as often as its attempts say, never on
// two instances at once, its output is all there; and once idle, no host
// is left claimed.
func (he *haEnv) check(names []string) {
	he.t.Helper()
	cs := he.containers()
	if len(cs) != len(names) {
		he.t.Fatalf("the leader lists %d containers, want %d:%s", len(cs), len(names), he.dump())
	}
	l := he.leader()
	retried := 0
	for _, c := range cs {
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 {
			he.t.Errorf("container %s (%s) is %s, want Complete 0", c.ID, c.Name, c.State)
		}
		runs := he.runsOf(c.Name)
		if len(runs) > 1 {
			retried++
		}
		if len(runs) != c.Attempts {
			he.t.Errorf("container %s (%s) ran %d times in %d attempts", c.ID, c.Name, len(runs), c.Attempts)
		}
		slices.SortFunc(runs, func(a, b run) int { return int(a.start - b.start) })
		for i, r := range runs {
			switch {
			case r.end == 0 && i == len(runs)-1:
				he.t.Errorf("container %s (%s): its last run (of %d) never ended, yet it is %s", c.ID, c.Name, len(runs), c.State)
			case r.end == 0:
				he.t.Errorf("container %s (%s): run %d never ended, and run %d started after it: maybe twice at once", c.ID, c.Name, i+1, i+2)
			case i > 0 && runs[i-1].end > r.start:
				he.t.Errorf("container %s (%s) ran twice at once: run %d started %s before run %d ended", c.ID, c.Name, i+1, time.Duration(runs[i-1].end-r.start), i)
			}
		}
		if l != nil {
			var out strings.Builder
			if err := l.client.Logs(context.Background(), c.ID, 0, false, &out); err != nil {
				he.t.Errorf("output of %s (%s): %v", c.ID, c.Name, err)
			} else if want := "out " + c.Name; strings.Count(out.String(), want) != len(runs) {
				he.t.Errorf("output of %s (%s) has %q %d times, want once per run (%d): %q", c.ID, c.Name, want, strings.Count(out.String(), want), len(runs), out.String())
			}
		}
	}
	if he.t.Failed() {
		he.t.Fatalf("state:%s", he.dump())
	}
	// Said, so that a pass shows whether a second run's output was checked.
	he.t.Logf("checked %d containers, %d of which ran more than once", len(cs), retried)
	he.until("every host released (no instance left)", 60*time.Second, func() bool { return len(he.claimedHosts()) == 0 })
}

// claimedHosts are the work dirs of the hosts that hold a tags file: an
// instance (docs/design.md §8).
func (he *haEnv) claimedHosts() []string {
	var claimed []string
	for _, d := range he.hostDirs {
		if _, err := os.Stat(filepath.Join(d, TagsFile)); err == nil {
			claimed = append(claimed, d)
		}
	}
	return claimed
}

// epochSeen is the highest epoch host i's runner has seen (0: none yet).
func (he *haEnv) epochSeen(i int) int64 {
	b, err := os.ReadFile(filepath.Join(he.hostDirs[i], RunnerDir, "~epoch"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
