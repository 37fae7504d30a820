//go:build linux

package agent

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// loopRig drives healthLoop step by step: every wait of the loop is handed
// to the test, which releases it after moving its clock, so nothing sleeps
// and every state the loop records can be checked in order.
type loopRig struct {
	t       *testing.T
	mu      sync.Mutex
	now     time.Time
	waits   chan time.Duration
	release chan time.Time
	results []checkResult // what successive checks return
	checks  int
	dead    bool // the container has ended
	signals []syscall.Signal
	records []healthRecord
	done    chan struct{}
	ended   chan struct{}
	// The loop's wait the test has taken and not yet released.
	pending    time.Duration
	hasPending bool
}

func newLoopRig(t *testing.T, hc runner.HealthCheck, results ...checkResult) *loopRig {
	r := &loopRig{t: t, now: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		waits: make(chan time.Duration), release: make(chan time.Time), results: results, done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(r.done)
		healthLoop(hc, healthDeps{
			now: func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now },
			after: func(d time.Duration) <-chan time.Time {
				r.waits <- d
				return r.release
			},
			check: func(timeout time.Duration) checkResult {
				r.mu.Lock()
				defer r.mu.Unlock()
				if timeout != hc.Timeout {
					t.Errorf("check run with timeout %v, want %v", timeout, hc.Timeout)
				}
				res := r.results[min(r.checks, len(r.results)-1)]
				r.checks++
				return res
			},
			alive: func() bool { r.mu.Lock(); defer r.mu.Unlock(); return !r.dead },
			ended: r.ended,
			signal: func(sig syscall.Signal) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.signals = append(r.signals, sig)
				if sig == syscall.SIGKILL {
					r.dead = true
				}
			},
			record: func(rec healthRecord) { r.mu.Lock(); defer r.mu.Unlock(); r.records = append(r.records, rec) },
			grace:  7 * time.Second,
		})
	}()
	return r
}

// step takes the loop's pending wait (it is blocked in after), checks its
// length, advances the clock by it and lets the loop go on; then it waits
// until the loop is blocked again (in its next wait, or ended), so that
// what it recorded meanwhile can be checked.
func (r *loopRig) step(want time.Duration) {
	r.t.Helper()
	if !r.settle() {
		r.t.Fatalf("loop ended; wanted a wait of %v", want)
	}
	d := r.pending
	r.hasPending = false
	if d != want {
		r.t.Fatalf("loop waits %v, want %v", d, want)
	}
	r.mu.Lock()
	r.now = r.now.Add(d)
	now := r.now
	r.mu.Unlock()
	r.release <- now
	r.settle()
}

// settle waits until the loop waits (true) or has ended (false).
func (r *loopRig) settle() bool {
	if r.hasPending {
		return true
	}
	select {
	case r.pending = <-r.waits:
		r.hasPending = true
		return true
	case <-r.done:
		return false
	}
}

// finish checks that the loop has ended.
func (r *loopRig) finish() {
	r.t.Helper()
	if r.settle() {
		r.t.Fatalf("loop waits %v; wanted it to end", r.pending)
	}
}

func (r *loopRig) last() healthRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records[len(r.records)-1]
}

var (
	pass = checkResult{ok: true, result: "ok", output: "fine"}
	fail = checkResult{result: "exit status 1", output: "down"}
)

func TestHealthLoop(t *testing.T) {
	hc := runner.HealthCheck{Command: []string{"check"}, Interval: 10 * time.Second, Timeout: 3 * time.Second, Retries: 3}

	t.Run("failures below retries keep the state; a pass resets them", func(t *testing.T) {
		r := newLoopRig(t, hc, fail, fail, pass, fail, fail)
		r.step(hc.Interval) // the first check has run
		if got := r.last(); got.Health.State != runner.HealthStarting || got.Health.Failures != 1 || got.Killed {
			t.Fatalf("after one failure: %+v", got)
		}
		r.step(hc.Interval)
		r.step(hc.Interval) // after fail, fail, pass
		got := r.last()
		if got.Health.State != runner.HealthHealthy || got.Health.Failures != 0 || got.Health.LastResult != "ok" || got.Health.LastOutput != "fine" {
			t.Fatalf("after a pass: %+v", got)
		}
		if want := time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC); !got.Health.LastCheck.Equal(want) {
			t.Fatalf("last check at %v, want %v", got.Health.LastCheck, want)
		}
		r.step(hc.Interval)
		r.step(hc.Interval) // two failures after being healthy
		if got := r.last(); got.Health.State != runner.HealthHealthy || got.Health.Failures != 2 || got.Health.LastResult != "exit status 1" {
			t.Fatalf("healthy, then two failures: %+v", got)
		}
		r.mu.Lock()
		r.dead = true // the container ends by itself
		r.mu.Unlock()
		r.step(hc.Interval)
		r.finish()
		if len(r.signals) != 0 || r.last().Killed {
			t.Fatalf("signals %v, record %+v; want none sent", r.signals, r.last())
		}
	})

	t.Run("retries failures in a row: recorded killed, TERM, KILL after the grace", func(t *testing.T) {
		r := newLoopRig(t, hc, fail)
		r.step(hc.Interval)
		r.step(hc.Interval)
		r.step(hc.Interval) // third failure: killed
		r.mu.Lock()
		rec, sigs := r.records[len(r.records)-1], append([]syscall.Signal(nil), r.signals...)
		r.mu.Unlock()
		if rec.Health.State != runner.HealthUnhealthy || rec.Health.Failures != 3 || !rec.Killed {
			t.Fatalf("record %+v, want unhealthy and killed", rec)
		}
		if len(sigs) != 1 || sigs[0] != syscall.SIGTERM {
			t.Fatalf("signals %v, want TERM first", sigs)
		}
		r.step(7 * time.Second) // the grace; it ignored TERM
		r.finish()
		if len(r.signals) != 2 || r.signals[1] != syscall.SIGKILL {
			t.Fatalf("signals %v, want TERM then KILL", r.signals)
		}
	})

	t.Run("a container that ends with TERM gets no KILL", func(t *testing.T) {
		r := newLoopRig(t, runner.HealthCheck{Command: []string{"c"}, Interval: time.Second, Timeout: time.Second, Retries: 1}, fail)
		r.step(time.Second)
		// killed: the rig's signal does not end it on TERM; end it now
		r.mu.Lock()
		r.dead = true
		r.mu.Unlock()
		r.step(7 * time.Second)
		r.finish()
		if len(r.signals) != 1 {
			t.Fatalf("signals %v, want TERM only", r.signals)
		}
	})

	t.Run("the checker ends with its container, not an interval later", func(t *testing.T) {
		r := newLoopRig(t, hc, pass)
		r.step(hc.Interval)
		if !r.settle() {
			t.Fatal("loop ended early")
		}
		r.mu.Lock()
		r.dead = true
		r.mu.Unlock()
		close(r.ended) // the wait in progress is not released
		<-r.done
		if r.checks != 1 || len(r.signals) != 0 {
			t.Fatalf("%d checks, signals %v", r.checks, r.signals)
		}
	})

	t.Run("a container ended before the first check: no check runs", func(t *testing.T) {
		r := newLoopRig(t, hc, pass)
		r.mu.Lock()
		r.dead = true
		r.mu.Unlock()
		r.step(hc.Interval)
		r.finish()
		if r.checks != 0 || r.last().Health.State != runner.HealthStarting {
			t.Fatalf("%d checks, record %+v", r.checks, r.last())
		}
	})
}

func TestRunCheck(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "GREETING=hello"}
	for _, tc := range []struct {
		name    string
		argv    []string
		timeout time.Duration
		ok      bool
		result  string
		output  string
	}{
		{"passes", []string{self, argvEcho, "all", "good"}, 5 * time.Second, true, "ok", "all\ngood"},
		{"sees the container's env", []string{self, envEcho}, 5 * time.Second, true, "ok", "GREETING=hello"},
		{"fails", []string{"/bin/sh", "-c", "echo broken >&2; exit 3"}, 5 * time.Second, false, "exit status 3", "broken"},
		{"times out, and its children with it", []string{"/bin/sh", "-c", "sleep 30 & sleep 30"}, 100 * time.Millisecond, false, "timed out after 100ms", ""},
		{"cannot run", []string{"/nonexistent/check"}, time.Second, false, `cannot run "/nonexistent/check"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			res := runCheck(tc.argv, env, "/", tc.timeout)
			if res.ok != tc.ok || !strings.Contains(res.result, tc.result) || !strings.Contains(res.output, tc.output) {
				t.Fatalf("got %+v, want ok=%v result %q output containing %q", res, tc.ok, tc.result, tc.output)
			}
			if took := time.Since(t0); took > 10*time.Second {
				t.Fatalf("took %v: a timed-out check's children kept it waiting", took)
			}
		})
	}
}

func TestTailBufferKeepsTheEndAsUTF8(t *testing.T) {
	b := &tailBuffer{max: 8}
	for i := 0; i < 10; i++ {
		b.Write([]byte("0123456789"))
	}
	b.Write([]byte("é!\n"))
	if got := b.text(); got != "56789é!" || len(got) > 8 {
		t.Fatalf("text %q", got)
	}
}

// The runner end to end: a container whose check fails is killed and
// reported unhealthy; one whose check passes is healthy.
func TestHealthCheckEndToEnd(t *testing.T) {
	h := newHarness(t)
	// Timeouts generous for a loaded machine: a check that timed out
	// would read as a failure of "well" and not as "exit status 1".
	hc := &runner.HealthCheck{Command: []string{"/bin/sh", "-c", "echo not ready; exit 1"}, Interval: time.Second, Timeout: time.Second, Retries: 2}
	h.start(runner.Spec{ID: "sick", Command: []string{"/bin/sleep", "60"}, HealthCheck: hc})
	h.start(runner.Spec{ID: "well", Command: []string{"/bin/sleep", "60"},
		HealthCheck: &runner.HealthCheck{Command: []string{"/bin/true"}, Interval: time.Second, Timeout: time.Second, Retries: 1}})
	h.start(runner.Spec{ID: "plain", Command: []string{"/bin/sleep", "60"}})

	st := h.waitState("sick", runner.StateExited)
	if st.EndReason() != runner.EndUnhealthy || st.Signal != runner.SignalTerm || st.Health == nil ||
		st.Health.State != runner.HealthUnhealthy || st.Health.Failures != 2 || st.Health.LastResult != "exit status 1" || st.Health.LastOutput != "not ready" {
		t.Fatalf("sick: %+v health %+v", st, st.Health)
	}
	wait.Until(t, "well healthy", waitFor, func() bool {
		st, ok := h.status("well")
		return ok && st.State == runner.StateRunning && st.Health != nil && st.Health.State == runner.HealthHealthy && !st.Health.LastCheck.IsZero()
	})
	if st, _ := h.status("plain"); st.Health != nil || st.EndReason() != "" {
		t.Fatalf("plain: %+v", st)
	}
	// Killed by the dispatcher: no end reason of the runner's own.
	if code, _, errs := h.run("", "kill", "well"); code != 0 {
		t.Fatalf("kill: %s", errs)
	}
	st = h.waitState("well", runner.StateExited)
	if st.EndReason() != "" || st.Health == nil || st.Health.State != runner.HealthHealthy {
		t.Fatalf("well after kill: %+v health %+v", st, st.Health)
	}
	// Forgotten and started again under the same id: the old health is gone.
	if code, _, errs := h.run("", "forget", "sick"); code != 0 {
		t.Fatalf("forget: %s", errs)
	}
	h.start(runner.Spec{ID: "sick", Command: []string{"/bin/sleep", "60"}, HealthCheck: &runner.HealthCheck{Command: []string{"/bin/true"}, Interval: time.Hour, Timeout: time.Second, Retries: 1}})
	if st, _ := h.status("sick"); st.Health == nil || st.Health.State != runner.HealthStarting || st.Health.Failures != 0 {
		t.Fatalf("restarted sick: %+v", st.Health)
	}
}
