// A streaming "runner watch" session, its output handed over line by line.

package sshexec

// A streaming session for runner.WatchExecutor: one command ("runner
// watch") kept running, its output handed over line by line as it comes,
// so that the runner can tell the dispatcher of an exit when it happens.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"

	"dispatch-tui/engine/runner"
)

var _ runner.WatchExecutor = (*Executor)(nil)

// Watch implements runner.WatchExecutor. The session holds one of the
// connection's session slots until it ends; CommandTimeout does not apply
// (a watch is meant to last), but the connection's keepalives do, so a
// cut connection ends it within their timeout. It ends, closing the
// session, when ctx is done or the executor is closed.
func (e *Executor) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.closeCtx, cancel)()
	s, err := e.openSession(ctx, cmd)
	if err != nil {
		return runner.NotSent(e.wrap(ctx, err))
	}
	defer e.closeSession(s)
	stop := context.AfterFunc(ctx, func() { _ = s.sess.Close() })
	defer stop()
	for {
		b, err := s.stdout.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue // no line of the protocol is this long: drop it
		case err != nil:
			if ctx.Err() != nil {
				return e.wrap(ctx, ctx.Err())
			}
			if xe := s.exitError(ctx); xe != nil {
				return xe
			}
			return e.wrap(ctx, fmt.Errorf("%q ended (connection lost?): %w", cmd, err))
		}
		line(bytes.TrimSuffix(b, []byte{'\n'}))
	}
}
