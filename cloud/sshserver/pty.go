// An interactive shell on a pseudo terminal for a session's "pty-req" and "shell" (Linux).

//go:build linux

package sshserver

// A session's "pty-req" and "shell": an interactive shell on a pseudo
// terminal, as sshd gives one (the console's `s` on a simulated
// instance).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
)

// ptyRequest is the payload of "pty-req" (RFC 4254 §6.2).
type ptyRequest struct {
	Term                 string
	Cols, Rows, PxW, PxH uint32
	Modes                string
}

// openPTY opens a pseudo terminal: its master and the path of its slave.
func openPTY() (*os.File, string, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, "", err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, "", fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, "", fmt.Errorf("pty number: %w", err)
	}
	return m, "/dev/pts/" + strconv.Itoa(n), nil
}

// startShell starts an interactive /bin/sh on a pseudo terminal of the
// requested type and size for the session; done is closed once it has
// finished and its exit status was sent. It returns the shell's process
// group (0 if it did not start).
func (s *Server) startShell(ch ssh.Channel, pr ptyRequest, env []string, done chan struct{}) int {
	fail := func(err error) int {
		fmt.Fprintf(ch.Stderr(), "dispatch-tui sshserver: cannot start a shell: %v\n", err)
		finish(ch, exitStatusPayload(127))
		close(done)
		return 0
	}
	m, slavePath, err := openPTY()
	if err != nil {
		return fail(err)
	}
	slave, err := os.OpenFile(slavePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return fail(err)
	}
	if pr.Cols > 0 && pr.Rows > 0 {
		unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(pr.Rows), Col: uint16(pr.Cols)})
	}
	cmd := exec.Command("/bin/sh", "-i")
	cmd.Dir = s.cfg.Home
	cmd.Env = append(append(env, "PATH="+os.Getenv("PATH"), "HOME="+s.cfg.Home, "TERM="+pr.Term), s.cfg.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// Its own session with the terminal as its controlling one: ctrl+c
	// typed there interrupts what runs in it, not the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	s.mu.Lock()
	if s.closed {
		err = errors.New("server closed")
	} else if err = cmd.Start(); err == nil {
		s.pgids[cmd.Process.Pid] = struct{}{}
	}
	s.mu.Unlock()
	slave.Close()
	if err != nil {
		m.Close()
		return fail(err)
	}
	pid := cmd.Process.Pid
	go io.Copy(m, ch)
	copied := make(chan struct{})
	go func() {
		io.Copy(ch, m) // ends with EIO once the shell and its children close the terminal
		close(copied)
	}()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		delete(s.pgids, pid)
		s.mu.Unlock()
		select { // what the shell wrote last, unless a child keeps the terminal
		case <-copied:
		case <-time.After(outputWaitDelay):
		}
		m.Close()
		<-copied
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		finish(ch, exitStatusPayload(max(code, 0)))
		close(done)
	}()
	return pid
}
