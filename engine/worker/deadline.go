package worker

import (
	"context"
	"time"

	"dispatch-tui/engine/runner"
)

// withCallDeadline returns e with a deadline of limit on every call whose
// context has none, so that no runner call (start, kill, forget, logs)
// waits on a dead connection for longer: a probe's calls have their own,
// tighter, deadline on the pool's clock (probe.go), and get none here. It keeps e's SessionExecutor side, which the
// runner client looks for.
//
// It also keeps e's WatchExecutor side, without a deadline: a watch is
// meant to last as long as its instance (exitnotice.go).
func withCallDeadline(e runner.Executor, limit time.Duration) runner.Executor {
	b := boundedExecutor{inner: e, limit: limit}
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
	limit time.Duration
}

// unbounded is the executor under the deadlines (every bounded kind
// embeds boundedExecutor, so has it): for a shell, which the operator ends.
func (b boundedExecutor) unbounded() runner.Executor { return b.inner }

func (b boundedExecutor) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || isClockBound(ctx) {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, b.limit)
}

func (b boundedExecutor) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	return b.inner.Execute(ctx, cmd, stdin)
}

func (b boundedExecutor) Close() error { return b.inner.Close() }

type boundedSessionExecutor struct {
	boundedExecutor
	session runner.SessionExecutor
}

func (b boundedSessionExecutor) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	return b.session.Exchange(ctx, cmd, frame)
}
