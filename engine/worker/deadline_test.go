package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// blockingExec keeps each call until its context ends, and hands the
// context over first.
type blockingExec struct{ ctxs chan context.Context }

func (b *blockingExec) Execute(ctx context.Context, _ string, _ []byte) ([]byte, []byte, error) {
	b.ctxs <- ctx
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func (b *blockingExec) Close() error { return nil }

type blockingSession struct{ blockingExec }

func (b *blockingSession) Exchange(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	b.ctxs <- ctx
	<-ctx.Done()
	return nil, ctx.Err()
}

// A call without a deadline of its own gets the limit on the pool's clock,
// and none in real time: it runs until a cut at the limit ends it, with an
// error that says so. A call with its own deadline keeps it.
func TestWithCallDeadline(t *testing.T) {
	const limit = time.Hour
	for _, session := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "session"}[session]
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			w := newCallWatch(clk)
			inner := &blockingSession{blockingExec{ctxs: make(chan context.Context, 1)}}
			var e runner.Executor = &inner.blockingExec
			if session {
				e = inner
			}
			e = withCallDeadline(e, w, limit)
			se, isSession := e.(runner.SessionExecutor)
			if isSession != session {
				t.Fatalf("SessionExecutor: %v, want %v", isSession, session)
			}
			errc := make(chan error, 1)
			go func() {
				var err error
				if session {
					_, err = se.Exchange(context.Background(), "x", nil)
				} else {
					_, _, err = e.Execute(context.Background(), "x", nil)
				}
				errc <- err
			}()
			ctx := <-inner.ctxs
			if d, ok := ctx.Deadline(); ok {
				t.Fatalf("the call has a deadline in real time (%s from now)", time.Until(d).Round(time.Second))
			}
			// The executor learns the pool's limit, so that its own
			// bound (SSH's default minute) does not cut the call sooner.
			if got, ok := runner.CallLimit(ctx); !ok || got != limit {
				t.Fatalf("the executor was told a limit of %s (%v), want %s", got, ok, limit)
			}
			w.cut(t0.Add(limit - time.Nanosecond))
			if ctx.Err() != nil || w.inFlight() != 1 {
				t.Fatalf("cut before its deadline: %v, %d in flight", ctx.Err(), w.inFlight())
			}
			clk.Advance(limit)
			w.cut(clk.Now())
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no answer within 1h0m0s") {
					t.Fatalf("error %v, want the cut's", err)
				}
			case <-time.After(wait.Budget(10 * time.Second)):
				t.Fatal("the call still runs 10 s after the cut at its deadline")
			}
			if n := w.inFlight(); n != 0 {
				t.Fatalf("%d calls still watched after the last ended", n)
			}

			own, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			go func() {
				_, _, err := e.Execute(own, "x", nil)
				errc <- err
			}()
			if got := <-inner.ctxs; got != own {
				t.Fatal("a call with a deadline of its own got another context")
			}
			if w.inFlight() != 0 {
				t.Fatal("a call with its own deadline is watched")
			}
			cancel()
			<-errc
		})
	}
}
