// Long-lived "runner serve" sessions, exchanging frames.

package sshexec

// Long-lived sessions for runner.SessionExecutor: one command (the
// runner's "serve") kept running per session, exchanging frames over its
// stdin and stdout, so that a batch costs neither a new SSH session nor a
// process start on the instance.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/engine/runner"
)

// maxIdleSessions bounds the idle long-lived sessions kept per command; each
// holds one of the connection's MaxSessions slots.
const maxIdleSessions = 3

var _ runner.SessionExecutor = (*Executor)(nil)

// serveSession is one long-lived session running cmd.
type serveSession struct {
	cmd    string
	client *ssh.Client
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout *bufio.Reader
	// The start of its stderr, and how the session ended: read only once
	// done is closed (Wait has copied stderr by then).
	stderr  *capBuffer
	waitErr error
	done    chan struct{} // closed once the command or the connection ended
}

// exitError returns, as a *runner.ExitError, the exit status of a command
// that ended (waiting for the session's end until ctx is done), or nil when
// it did not end with one (a lost connection). A runner that cannot be run
// (127: deleted) must read as such, not as a lost connection.
func (s *serveSession) exitError(ctx context.Context) error {
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil
	}
	var xe *ssh.ExitError
	if !errors.As(s.waitErr, &xe) {
		return nil
	}
	return &runner.ExitError{Code: xe.ExitStatus(), Stderr: stderrTail(s.stderr.buf, xe)}
}

func (s *serveSession) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Exchange implements runner.SessionExecutor. A frame that could not be
// written whole never ran (the runner runs a frame only once it has its
// closing empty line), so that failure matches runner.ErrNotSent; one
// that failed after is of unknown outcome. A command that exited before
// replying returns a *runner.ExitError, as Execute does. When ctx is done
// or CommandTimeout passes the session is closed.
func (e *Executor) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, e.commandTimeout(ctx))
	defer cancel()
	defer context.AfterFunc(e.closeCtx, cancel)()
	for attempt := 0; ; attempt++ {
		s, reused, err := e.takeSession(ctx, cmd)
		if err != nil {
			return nil, runner.NotSent(e.wrap(ctx, err))
		}
		out, sent, err := e.exchange(ctx, s, frame)
		if err == nil {
			e.putSession(s)
			return out, nil
		}
		e.closeSession(s)
		var xe *runner.ExitError
		exited := errors.As(err, &xe)
		if !sent {
			// A reused session may have ended while idle: one more
			// try on a new one, since nothing ran.
			if reused && attempt == 0 && ctx.Err() == nil {
				continue
			}
			if exited {
				return nil, runner.NotSent(err)
			}
			return nil, runner.NotSent(e.wrap(ctx, err))
		}
		if exited {
			return nil, err
		}
		return nil, e.wrap(ctx, err)
	}
}

// exchange writes frame to s and reads the reply up to its empty line.
// sent reports that the whole frame was written.
func (e *Executor) exchange(ctx context.Context, s *serveSession, frame []byte) (out []byte, sent bool, err error) {
	// Closing the session unblocks a write or read stuck on a hung peer.
	stop := context.AfterFunc(ctx, func() { _ = s.sess.Close() })
	defer stop()
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if _, err := s.stdin.Write(frame); err != nil {
		if xe := s.exitError(ctx); xe != nil {
			return nil, false, xe
		}
		return nil, false, fail(fmt.Errorf("send to %q: %w", s.cmd, err))
	}
	var buf bytes.Buffer
	for {
		line, err := s.stdout.ReadSlice('\n')
		buf.Write(line)
		if buf.Len() > e.opts.MaxOutput {
			return nil, true, fmt.Errorf("%w (%d bytes of replies)", ErrOutputLimit, e.opts.MaxOutput)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue // a long line: read on
		case err != nil:
			if xe := s.exitError(ctx); xe != nil {
				return nil, true, xe
			}
			return nil, true, fail(fmt.Errorf("%q ended before replying (connection lost?): %w", s.cmd, err))
		case len(line) == 1: // the empty line that ends the reply
			return buf.Bytes(), true, nil
		}
	}
}

// takeSession returns an idle live session running cmd, or starts one.
func (e *Executor) takeSession(ctx context.Context, cmd string) (s *serveSession, reused bool, err error) {
	if e.closeCtx.Err() != nil {
		// A kept session may not know yet that Close has cut its
		// connection, and a write to it can be taken: nothing may be
		// sent once closed (Close's promise), so it is not tried.
		return nil, false, ErrClosed
	}
	e.serveMu.Lock()
	for len(e.idle[cmd]) > 0 {
		list := e.idle[cmd]
		s = list[len(list)-1]
		e.idle[cmd] = list[:len(list)-1]
		if !s.dead() {
			e.serveMu.Unlock()
			return s, true, nil
		}
		e.serveMu.Unlock()
		e.closeSession(s)
		e.serveMu.Lock()
	}
	e.serveMu.Unlock()
	s, err = e.openSession(ctx, cmd)
	return s, false, err
}

// putSession keeps s for the next exchange, or closes it when enough are
// kept already.
func (e *Executor) putSession(s *serveSession) {
	e.serveMu.Lock()
	if e.idle == nil {
		e.idle = map[string][]*serveSession{}
	}
	if len(e.idle[s.cmd]) < maxIdleSessions && e.closeCtx.Err() == nil {
		e.idle[s.cmd] = append(e.idle[s.cmd], s)
		s = nil
	}
	e.serveMu.Unlock()
	if s != nil {
		e.closeSession(s)
	}
}

func (e *Executor) closeSession(s *serveSession) {
	_ = s.stdin.Close() // the runner exits at the end of its stdin
	_ = s.sess.Close()
	if e.sem != nil {
		<-e.sem
	}
}

// openSession starts cmd in a new session, holding one session slot until
// closeSession.
func (e *Executor) openSession(ctx context.Context, cmd string) (*serveSession, error) {
	if e.sem != nil {
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s, err := e.startSession(ctx, cmd)
	if err != nil && e.sem != nil {
		<-e.sem
	}
	return s, err
}

func (e *Executor) startSession(ctx context.Context, cmd string) (*serveSession, error) {
	for attempt := 0; ; attempt++ {
		c, fresh, err := e.getClient(ctx)
		if err != nil {
			return nil, err
		}
		// A hung connection would block NewSession for good: drop it
		// when ctx ends.
		stop := context.AfterFunc(ctx, func() { e.drop(c) })
		sess, err := c.NewSession()
		stop()
		if err != nil {
			if e.redial(ctx, c, fresh, attempt, err) {
				continue
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		s, err := e.startCommand(c, sess, cmd)
		if err != nil {
			_ = sess.Close()
			return nil, err
		}
		return s, nil
	}
}

func (e *Executor) startCommand(c *ssh.Client, sess *ssh.Session, cmd string) (*serveSession, error) {
	e.setenv(sess)
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &capBuffer{max: maxErrStderr}
	sess.Stderr = stderr
	if err := sess.Start(cmd); err != nil {
		return nil, err
	}
	s := &serveSession{cmd: cmd, client: c, sess: sess, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: stderr, done: make(chan struct{})}
	go func() {
		s.waitErr = sess.Wait() // returns when the command exits or the connection ends
		close(s.done)
	}()
	return s, nil
}
