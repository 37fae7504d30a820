// The deadlines of the calls made on an instance, kept on the pool's clock.

package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

// withCallDeadline returns e with a deadline of limit, kept on the pool's
// clock by w, on every call whose context has none, so that no runner call
// (start, kill, forget, logs) waits on a dead connection for longer: a
// probe's calls have their own, tighter, deadline, also on the pool's clock
// (probe.go), and get none here. It keeps e's SessionExecutor side, which
// the runner client looks for.
//
// It also keeps e's WatchExecutor side, without a deadline: a watch is
// meant to last as long as its instance (exitnotice.go).
func withCallDeadline(e runner.Executor, w *callWatch, limit time.Duration) runner.Executor {
	b := boundedExecutor{inner: e, watch: w, limit: limit}
	we, watches := e.(runner.WatchExecutor)
	if se, ok := e.(runner.SessionExecutor); ok {
		bs := boundedSessionExecutor{boundedExecutor: b, session: se}
		if watches {
			return boundedWatchSessionExecutor{bs, we}
		}
		return bs
	}
	if watches {
		return boundedWatchExecutor{b, we}
	}
	return b
}

// errPastDeadline is why callWatch cuts a call.
var errPastDeadline = errors.New("deadline passed on the pool's clock")

// callWatch keeps the deadlines of calls on the pool's clock: Step cuts
// every call past its deadline, so that the clock a test injects decides
// them as it decides the probes'. It has its own lock, taken after the
// pool's.
type callWatch struct {
	clk   clock.Clock
	mu    sync.Mutex
	next  uint64
	calls map[uint64]watchedCall
}

type watchedCall struct {
	deadline time.Time
	cancel   context.CancelCauseFunc
}

func newCallWatch(clk clock.Clock) *callWatch {
	return &callWatch{clk: clk, calls: map[uint64]watchedCall{}}
}

// start gives a call a deadline of limit from now; done ends it.
func (w *callWatch) start(ctx context.Context, limit time.Duration) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	id := w.next
	w.next++
	w.calls[id] = watchedCall{deadline: w.clk.Now().Add(limit), cancel: cancel}
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		delete(w.calls, id)
		w.mu.Unlock()
		cancel(nil)
	}
}

// cut cancels every call whose deadline is not after now.
func (w *callWatch) cut(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, c := range w.calls {
		if !now.Before(c.deadline) {
			c.cancel(errPastDeadline)
			delete(w.calls, id)
		}
	}
}

// inFlight is how many calls it watches.
func (w *callWatch) inFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

type boundedWatchExecutor struct {
	boundedExecutor
	watch runner.WatchExecutor
}

func (b boundedWatchExecutor) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	return b.watch.Watch(ctx, cmd, line)
}

type boundedWatchSessionExecutor struct {
	boundedSessionExecutor
	watch runner.WatchExecutor
}

func (b boundedWatchSessionExecutor) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	return b.watch.Watch(ctx, cmd, line)
}

type boundedExecutor struct {
	inner runner.Executor
	watch *callWatch
	limit time.Duration
}

// unbounded is the executor under the deadlines (every bounded kind
// embeds boundedExecutor, so has it): for a shell, which the operator ends.
func (b boundedExecutor) unbounded() runner.Executor { return b.inner }

// bound gives a call the pool's deadline, unless it has one of its own,
// and tells the executor under it that the pool bounds it
// (runner.WithCallLimit): limit is the slowest call's, so the executor's
// own bound never cuts a call the pool gave longer.
func (b boundedExecutor) bound(ctx context.Context) (context.Context, func()) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	ctx = runner.WithCallLimit(ctx, b.limit)
	if isClockBound(ctx) {
		return ctx, func() {}
	}
	return b.watch.start(ctx, b.limit)
}

// why says so when the deadline cut the call.
func (b boundedExecutor) why(ctx context.Context, err error) error {
	if err != nil && context.Cause(ctx) == errPastDeadline {
		return fmt.Errorf("no answer within %s: %w", b.limit, err)
	}
	return err
}

func (b boundedExecutor) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	ctx, done := b.bound(ctx)
	defer done()
	stdout, stderr, err := b.inner.Execute(ctx, cmd, stdin)
	return stdout, stderr, b.why(ctx, err)
}

func (b boundedExecutor) Close() error { return b.inner.Close() }

type boundedSessionExecutor struct {
	boundedExecutor
	session runner.SessionExecutor
}

func (b boundedSessionExecutor) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	ctx, done := b.bound(ctx)
	defer done()
	reply, err := b.session.Exchange(ctx, cmd, frame)
	return reply, b.why(ctx, err)
}
