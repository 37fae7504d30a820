package e2e

import (
	"dispatch-tui/engine/enginetest/wait"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/simulate"
)

var (
	instCountRE = regexp.MustCompile(`\d+ (booting|idle|running)\b`)
	ctrCountRE  = regexp.MustCompile(`\d+ (Queued|Running|Complete)\b`)
	instRowRE   = regexp.MustCompile(`^..local-[0-9a-f]+\s+\S+\s+(booting|idle|running)\b`)
	ctrRowRE    = regexp.MustCompile(`^..c-[0-9a-f]+\s.*\s(Queued|Running|Complete)\s`)
)

// TestDemoShowsLifecycle: `dispatch-tui --demo` at 120×40 shows instances
// booting, idle and running and containers Queued, Running and Complete
// within 15 s on a quiet machine (longer in proportion to the load, as
// every wait in the tests); q exits 0, restores the terminal and removes the demo's
// state dir.
func TestDemoShowsLifecycle(t *testing.T) {
	t.Parallel()
	needTmux(t)
	sb := newSandbox(t)
	// If the test dies before q, take the demo's instances down (their
	// runners outlive the TUI): the demo's state dir is under our TMPDIR.
	t.Cleanup(func() {
		dirs, _ := filepath.Glob(filepath.Join(sb.tmp, "dispatch-tui-demo-*"))
		for _, d := range dirs {
			destroyInstances(t, simulate.DemoConfig(config.Default(), d))
		}
	})
	tm := startTerm(t, sb, 120, 40, nil, binary, "--demo")

	start := time.Now()
	stretch, why := wait.Stretch()
	within := time.Duration(float64(15*time.Second) * stretch)
	deadline := start.Add(within)
	inst := map[string]time.Duration{} // state -> when first seen
	ctr := map[string]time.Duration{}
	wantInst := []string{"booting", "idle", "running"}
	wantCtr := []string{"Queued", "Running", "Complete"}
	all := func(seen map[string]time.Duration, want []string) bool {
		for _, w := range want {
			if _, ok := seen[w]; !ok {
				return false
			}
		}
		return true
	}
	note := func(seen map[string]time.Duration, s string) {
		if _, ok := seen[s]; !ok {
			seen[s] = time.Since(start)
		}
	}
	view := 1
	switched := time.Now()
	// An instance is idle only between booting and its first container
	// (the demo keeps the queue full), often for less than a refresh, so
	// the loop keeps 2 s for the fallback below.
	for time.Now().Before(deadline.Add(-2*time.Second)) && !(all(inst, wantInst) && all(ctr, wantCtr)) {
		sc := tm.capture()
		ls := strings.Split(sc, "\n")
		tab := line(sc, 5)
		// The header's counts (on every view) and the rows of each view.
		for _, m := range instCountRE.FindAllStringSubmatch(line(sc, 1), -1) {
			note(inst, m[1])
		}
		if strings.Contains(tab, "[1:instances]") {
			for _, l := range ls[min(6, len(ls)):] {
				if m := instRowRE.FindStringSubmatch(l); m != nil {
					note(inst, m[1])
				}
			}
		}
		if strings.Contains(tab, "[2:containers]") {
			for _, m := range ctrCountRE.FindAllStringSubmatch(line(sc, 2), -1) {
				note(ctr, m[1])
			}
			for _, l := range ls[min(6, len(ls)):] {
				if m := ctrRowRE.FindStringSubmatch(l); m != nil {
					note(ctr, m[1])
				}
			}
		}
		// Stay on a view while only it lacks states; otherwise switch
		// every 700 ms.
		instDone, ctrDone := all(inst, wantInst), all(ctr, wantCtr)
		next := view
		switch {
		case instDone && !ctrDone:
			next = 2
		case ctrDone && !instDone:
			next = 1
		case time.Since(switched) > 700*time.Millisecond:
			next = 3 - view
		}
		if next != view {
			tm.keys([]string{"", "1", "2"}[next])
			view, switched = next, time.Now()
		}
		time.Sleep(30 * time.Millisecond)
	}
	if _, ok := inst["idle"]; !ok {
		// Fallback: the events view, filtered, shows an instance's
		// "booting -> idle" transition.
		tm.keys("4")
		tm.waitScreen("the events view", 2*time.Second, func(sc string) bool { return strings.Contains(line(sc, 5), "[4:events]") })
		tm.keys("/")
		tm.typeText("booting -> idle")
		tm.keys("Enter")
		sc := tm.waitScreen("an instance's booting -> idle event", time.Until(deadline), func(sc string) bool {
			for _, l := range strings.Split(sc, "\n")[7:] {
				if strings.Contains(l, " local-") && strings.Contains(l, "booting -> idle") {
					return true
				}
			}
			return false
		})
		note(inst, "idle")
		t.Logf("idle was too brief to be drawn in the instances view; the events view shows it:\n%s", sc)
		tm.keys("Escape")
		tm.waitScreen("no filter", 5*time.Second, func(sc string) bool { return !strings.Contains(line(sc, 5), "filter:") })
	}
	t.Logf("instance states first seen: %v; container states: %v", inst, ctr)
	var missing []string
	for _, w := range wantInst {
		if _, ok := inst[w]; !ok {
			missing = append(missing, "instance "+w)
		}
	}
	for _, w := range wantCtr {
		if _, ok := ctr[w]; !ok {
			missing = append(missing, "container "+w)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("within %s%s the demo never showed %s; last screen:\n%s", within.Round(time.Second), why, strings.Join(missing, ", "), tm.last)
	}
	// The order of first sightings follows the lifecycle.
	if !(inst["booting"] <= inst["idle"] && inst["booting"] <= inst["running"]) {
		t.Errorf("instance states seen out of order: %v", inst)
	}
	if !(ctr["Running"] <= ctr["Complete"]) {
		t.Errorf("container states seen out of order: %v", ctr)
	}

	dirs, _ := filepath.Glob(filepath.Join(sb.tmp, "dispatch-tui-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("demo state dirs under TMPDIR: %v, want 1", dirs)
	}
	tm.quit()
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		left, _ := os.ReadDir(filepath.Join(dirs[0], "local", "instances"))
		names := make([]string, 0, len(left))
		for _, e := range left {
			names = append(names, e.Name())
		}
		slices.Sort(names)
		t.Errorf("demo state dir %s left behind after q (instances: %v)", dirs[0], names)
	}
}
