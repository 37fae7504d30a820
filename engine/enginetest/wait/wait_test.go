package wait

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own and returns the
// failure message ("" when f did not fail).
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	msg := run(t, func(tb testing.TB) { Until(tb, "three polls", 10*time.Second, func() bool { n++; return n == 3 }) })
	if msg != "" || n != 3 {
		t.Fatalf("failed with %q after %d polls, want success at the third", msg, n)
	}
}

func TestUntilFailsSayingWhatWasSeen(t *testing.T) {
	steps := 0
	w := With{Seen: func() string { return "the door shut" }, Step: func() { steps++ }}
	msg := run(t, func(tb testing.TB) { w.Until(tb, "the door opens", 30*time.Millisecond, func() bool { return false }) })
	if !strings.Contains(msg, "the door opens did not happen; seen: the door shut") || !strings.Contains(msg, "30ms on a quiet machine") {
		t.Errorf("failure %q, want what was awaited, the quiet-machine deadline and what was seen", msg)
	}
	if steps == 0 {
		t.Error("Step never ran between polls")
	}
}

func TestStepsCountsAndFails(t *testing.T) {
	steps := 0
	w := With{Step: func() { steps++ }, Seen: func() string { return fmt.Sprint(steps, " steps") }}
	msg := run(t, func(tb testing.TB) { w.Steps(tb, "five steps", 10, func() bool { return steps == 5 }) })
	if msg != "" || steps != 5 {
		t.Fatalf("failed with %q at %d steps, want success at 5", msg, steps)
	}
	steps = 0
	msg = run(t, func(tb testing.TB) { w.Steps(tb, "never", 4, func() bool { return false }) })
	if msg != "after 4 steps: never did not happen; seen: 4 steps" {
		t.Errorf("failure %q, want it after exactly 4 steps, with what was seen", msg)
	}
}

func TestStretchIsBounded(t *testing.T) {
	s, why := Stretch()
	if s < 1 || s > maxStretch || (s == 1) != (why == "") {
		t.Errorf("Stretch() = %v, %q: want 1 to %d, explained when above 1", s, why, maxStretch)
	}
}

func TestBudgetIsStretched(t *testing.T) {
	s, _ := Stretch()
	// The load may change between the two reads: bounds, not equality.
	if b := Budget(time.Minute); b < time.Minute || b > maxStretch*time.Minute {
		t.Errorf("Budget(1m) = %s at a stretch of %.1f: want 1m to %dm", b, s, maxStretch)
	}
}
