// An interactive shell over the executor's connection.

package sshexec

// An interactive shell on the instance over the executor's connection
// (runner.ShellExecutor): the operator's `s` in the console.

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"
)

// Shell implements runner.ShellExecutor: a session with a terminal on the
// connection the executor keeps, running the login shell.
func (e *Executor) Shell(ctx context.Context, term string, cols, rows int, in io.Reader, out io.Writer) error {
	c, _, err := e.getClient(ctx)
	if err != nil {
		return e.wrap(ctx, err)
	}
	s, err := c.NewSession()
	if err != nil {
		return e.wrap(ctx, fmt.Errorf("open a session: %w", err))
	}
	defer s.Close()
	e.setenv(s)
	modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
	if err := s.RequestPty(term, rows, cols, modes); err != nil {
		return fmt.Errorf("the instance refused a terminal: %w", err)
	}
	s.Stdin, s.Stdout, s.Stderr = in, out, out
	if err := s.Shell(); err != nil {
		return fmt.Errorf("the instance refused a shell: %w", err)
	}
	defer context.AfterFunc(ctx, func() { s.Close() })()
	err = s.Wait()
	var xe *ssh.ExitError
	if errors.As(err, &xe) {
		return nil // the shell's exit status is the user's business
	}
	if err != nil {
		return e.wrap(ctx, err)
	}
	return nil
}
