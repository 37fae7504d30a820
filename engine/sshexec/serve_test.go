package sshexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// frameCounter answers each frame (lines up to an empty one) with the number
// of lines it held, then an empty line: "runner serve"'s framing.
const frameCounter = `n=0; while IFS= read -r line; do if [ -z "$line" ]; then echo "$n lines"; echo; n=0; else n=$((n+1)); fi; done`

func exchange(t *testing.T, e *Executor, cmd string, lines int) string {
	t.Helper()
	out, err := e.Exchange(context.Background(), cmd, []byte(strings.Repeat("x\n", lines)+"\n"))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	return string(out)
}

func countStarted(s *testServer, cmd string) int {
	n := 0
	for {
		select {
		case c := <-s.execStarted:
			if c == cmd {
				n++
			}
		default:
			return n
		}
	}
}

func TestExchangeKeepsOneSession(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	for i := range 5 {
		if out := exchange(t, e, frameCounter, i); out != fmt.Sprintf("%d lines\n\n", i) {
			t.Fatalf("exchange %d: %q", i, out)
		}
	}
	if n := countStarted(f.srv, frameCounter); n != 1 {
		t.Fatalf("the command was started %d times for 5 exchanges", n)
	}
}

// More exchanges at once than the connection has session slots: each
// waits for a slot, and no more sessions are open at once than the slots.
// Sessions are opened and closed as they go (the executor keeps only
// maxIdleSessions idle), so how many were started says nothing of the
// bound: the server counts those open at once (maxOpen). A session's
// command answers nothing until DefaultMaxSessions of them have started,
// so the slots are all taken at once and the count must reach the bound.
func TestExchangeConcurrent(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.srv.dir, "started"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf(`touch started/$$; while [ "$(ls started | wc -l)" -lt %d ]; do sleep 0.02; done; %s`, DefaultMaxSessions, frameCounter)
	e := f.executor(t, f.opts())
	const goroutines = DefaultMaxSessions + 6
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range 10 {
				out, err := e.Exchange(context.Background(), cmd, []byte(strings.Repeat("x\n", g+i)+"\n"))
				if err == nil && string(out) != fmt.Sprintf("%d lines\n\n", g+i) {
					err = fmt.Errorf("reply %q to %d lines", out, g+i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := f.srv.maxOpen.Load(); n != DefaultMaxSessions {
		t.Fatalf("at most %d sessions open at once, want the connection's %d slots all taken and no more", n, DefaultMaxSessions)
	}
	if n := f.srv.accepted.Load(); n != 1 {
		t.Fatalf("%d connections accepted, want 1", n)
	}
}

func TestExchangeReplacesEndedSession(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	// Answers one frame of one line, then exits.
	const once = `read -r a; read -r b; echo one; echo`
	for range 3 {
		out, err := e.Exchange(context.Background(), once, []byte("x\n\n"))
		if err != nil || string(out) != "one\n\n" {
			t.Fatalf("Exchange: %q %v", out, err)
		}
		f.srv.waitExited(t, once)
		waitIdleDead(t, e, once)
	}
	if n := countStarted(f.srv, once); n != 3 {
		t.Fatalf("started %d times, want a new session per exchange (3)", n)
	}

	// A dropped connection: the next exchange dials again.
	exchange(t, e, frameCounter, 1)
	f.srv.dropAll()
	waitIdleDead(t, e, frameCounter)
	if out := exchange(t, e, frameCounter, 2); out != "2 lines\n\n" {
		t.Fatalf("after a drop: %q", out)
	}
}

func TestExchangeOutcomes(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.CommandTimeout = 2 * time.Second
	e := f.executor(t, o)
	// The timeout is the session's: the connection is made first, so that
	// a loaded machine's slow handshake is not what times out.
	exchange(t, e, frameCounter, 1)
	// The command that exits gets a deadline a loaded machine meets: its
	// outcome is its exit status, not the timeout.
	patient := f.opts()
	patient.CommandTimeout = 30 * time.Second
	ep := f.executor(t, patient)
	for _, tc := range []struct {
		name, cmd string
		e         *Executor
		want      error
		wantCode  int // an *runner.ExitError with this code (0: none)
	}{
		// It read the frame and died without replying: it may have run,
		// and its exit status says how it ended.
		{"exits without replying", `read -r a; read -r b; exit 3`, ep, nil, 3},
		// Never replies: the timeout closes the session.
		{"never replies", `cat > /dev/null`, e, context.DeadlineExceeded, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.e.Exchange(context.Background(), tc.cmd, []byte("x\n\n"))
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, runner.ErrNotSent) {
				t.Fatalf("a frame that reached the command must not count as never sent: %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
			var xe *runner.ExitError
			switch {
			case tc.wantCode != 0:
				if !errors.As(err, &xe) || xe.Code != tc.wantCode {
					t.Fatalf("want exit status %d, got %v", tc.wantCode, err)
				}
			case !strings.Contains(err.Error(), f.srv.addr):
				t.Fatalf("error does not name the address: %v", err)
			}
		})
	}
	// Nothing can be sent to a closed executor.
	e.Close()
	if _, err := e.Exchange(context.Background(), frameCounter, []byte("\n")); !errors.Is(err, runner.ErrNotSent) || !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A runner that cannot be run (deleted from under the dispatcher) makes
// the session's shell exit 127 without replying: Exchange returns that
// exit status and the shell's message, as Execute does, so that the pool
// can tell it from a lost connection and install the runner again.
func TestExchangeRunnerNotFound(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	cmd := "/nonexistent/dispatch-tui-runner runner serve"
	_, err := e.Exchange(context.Background(), cmd, []byte("{\"verb\":\"list\"}\n\n"))
	var xe *runner.ExitError
	if !errors.As(err, &xe) || xe.Code != 127 || !strings.Contains(xe.Stderr, "/nonexistent/dispatch-tui-runner") {
		t.Fatalf("want exit status 127 naming the runner, got %v", err)
	}
}

// waitIdleDead waits until the client has heard that cmd's idle session
// ended. (Until then a reused session takes the frame and fails with an
// unknown outcome, which is right: it cannot tell when the command died.)
func waitIdleDead(t *testing.T, e *Executor, cmd string) {
	t.Helper()
	wait.Until(t, fmt.Sprintf("the client to hear that %q ended", cmd), 5*time.Second, func() bool {
		e.serveMu.Lock()
		defer e.serveMu.Unlock()
		for _, s := range e.idle[cmd] {
			if !s.dead() {
				return false
			}
		}
		return true
	})
}
