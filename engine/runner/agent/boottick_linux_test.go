package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"dispatch-tui/engine/runner"
)

// The boot clock read around a fork gives the child's start as /proc
// shows it whenever the clock did not tick across the fork.
func TestBootTickMatchesProc(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	same := 0
	for range 200 {
		t0, ok0 := bootTick()
		pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 0"}, &syscall.ProcAttr{
			Files: []uintptr{devnull.Fd(), devnull.Fd(), devnull.Fd()},
		})
		if err != nil {
			t.Fatal(err)
		}
		t1, ok1 := bootTick()
		if !ok0 || !ok1 {
			t.Fatal("no boot clock")
		}
		// Not reaped yet: /proc still has it (a zombie at worst).
		st := procStart(pid)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		if t0 != t1 {
			continue
		}
		same++
		if want := strconv.FormatUint(t0, 10); st != want {
			t.Fatalf("fork between ticks %d and %d: /proc says %s", t0, t1, st)
		}
	}
	if same == 0 {
		t.Fatal("the clock ticked across every fork")
	}
	t.Logf("%d of 200 forks within one tick", same)
}

// startClock uses the clock only once it agreed with /proc, and never
// when it did not.
func TestStartClock(t *testing.T) {
	pid := os.Getpid()
	real := procStart(pid)
	for _, tc := range []struct {
		name    string
		c       startClock
		trusted bool
	}{
		// This process started long before "now": a clock that says it
		// forked now disagrees with /proc.
		{"disagrees", startClock{}, false},
		{"already trusted", startClock{checked: true, trusted: true}, true},
		{"already distrusted", startClock{checked: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c startClock
			var got string
			var now uint64
			// Again if the clock ticked between the two reads.
			for range 10 {
				c = tc.c
				now, _ = bootTick()
				if got = c.start(pid, now, true); c.checked {
					break
				}
			}
			if c.trusted != tc.trusted || !c.checked {
				t.Fatalf("checked %v trusted %v, want trusted %v", c.checked, c.trusted, tc.trusted)
			}
			want := real
			if tc.trusted {
				want = strconv.FormatUint(now, 10)
			}
			if got != want {
				t.Fatalf("start %s, want %s", got, want)
			}
		})
	}
}

// Every command a kept supervisor starts has in pid_start the start time
// /proc shows, whether it came from /proc or from the boot clock.
func TestRecordedStartsMatchProc(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServe(t, h.env)
	defer srv.end()
	var specs []runner.Spec
	for i := range 40 {
		specs = append(specs, runner.Spec{ID: fmt.Sprintf("s%d", i), Command: []string{"sleep", "60"}})
	}
	mustStart(t, srv, specs[:20]...)
	mustStart(t, srv, specs[20:]...)
	for _, s := range specs {
		pr, err := readPIDRecord(filepath.Join(h.env.StateDir, s.ID))
		if err != nil {
			t.Fatal(err)
		}
		if want := procStart(pr.pid); pr.start != want {
			t.Errorf("%s: pid_start says it started at tick %s, /proc says %s", s.ID, pr.start, want)
		}
		syscall.Kill(-pr.pid, syscall.SIGKILL)
	}
}

// BenchmarkStartTime: what recording a command's start costs from /proc
// and from the boot clock (once trusted).
func BenchmarkStartTime(b *testing.B) {
	pid := os.Getpid()
	b.Run("proc", func(b *testing.B) {
		for b.Loop() {
			procStart(pid)
		}
	})
	b.Run("clock", func(b *testing.B) {
		c := startClock{checked: true, trusted: true}
		for b.Loop() {
			t0, ok := bootTick()
			c.start(pid, t0, ok)
		}
	})
}
