// Package wait is the tests' one way to wait for a condition: polled in real
// time against a deadline stretched for a loaded machine, or stepped on a
// fake clock a bounded number of times; either way a failure says what was
// awaited and what was seen instead. It imports nothing of this module, so
// every package's tests can use it.
package wait

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxPoll is the longest pause between two polls: conditions that hold
// soon are seen soon (pauses start at a millisecond and double), and one
// that runs a command or steps an engine is not run more than 50 times a
// second.
const maxPoll = 20 * time.Millisecond

// maxStretch bounds how far load stretches a deadline, so that a test that
// will never pass still ends.
const maxStretch = 4

// With says how to wait, beyond what and for how long. The zero value
// only polls.
type With struct {
	// Seen, if set, says what was seen instead; the failure message ends
	// with it.
	Seen func() string
	// Step, if set, runs between two polls: an engine or pool stepped in
	// real time by the test (Until), or one step of a fake clock (Steps).
	Step func()
}

// Until polls cond until it holds. See With.Until.
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	With{}.Until(t, what, timeout, cond)
}

// Until polls cond in real time until it holds, running w.Step between
// polls. timeout is what the wait may take on a quiet machine: it fails t
// only once timeout, stretched by the machine's load (Stretch), has passed.
func (w With) Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	start := time.Now()
	for pause := time.Millisecond; !cond(); pause = min(2*pause, maxPoll) {
		if took := time.Since(start); took > timeout {
			s, why := Stretch()
			if took > time.Duration(float64(timeout)*s) {
				t.Fatalf("after %s (%s on a quiet machine%s): %s did not happen%s",
					took.Round(time.Millisecond), timeout, why, what, w.seen())
			}
		}
		if w.Step != nil {
			w.Step()
		}
		time.Sleep(pause)
	}
}

// Steps runs w.Step (required) until cond holds, failing t once it has run
// max times and cond still does not hold. For fake clocks: no real time is
// measured, so the outcome does not depend on the machine's load.
func (w With) Steps(t testing.TB, what string, max int, cond func() bool) {
	t.Helper()
	for range max {
		if cond() {
			return
		}
		w.Step()
	}
	if !cond() {
		t.Fatalf("after %d steps: %s did not happen%s", max, what, w.seen())
	}
}

func (w With) seen() string {
	if w.Seen == nil {
		return ""
	}
	return "; seen: " + w.Seen()
}

// Budget is d, what a bound handed to the code under test (a tool's
// --timeout, say) needs on a quiet machine, stretched as Until stretches
// its deadlines: such a bound is not polled, so it must be generous itself.
func Budget(d time.Duration) time.Duration {
	s, _ := Stretch()
	return time.Duration(float64(d) * s)
}

// Stretch is how many times longer than on a quiet machine a wait may
// take now: the one-minute load average per CPU, between 1 and 4 (1 where
// the load is not known). why says so for a failure message ("" at 1).
func Stretch() (s float64, why string) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1, ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 1, ""
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 1, ""
	}
	s = min(max(load/float64(runtime.NumCPU()), 1), maxStretch)
	if s == 1 {
		return 1, ""
	}
	return s, fmt.Sprintf(", stretched ×%.1f for a load of %.1f on %d CPUs", s, load, runtime.NumCPU())
}
