//go:build unix

package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// launchMany starts one supervisor for the containers ids (their
// directories exist under root; specs holds their specs as JSON, sent to
// the supervisor on its stdin) and waits until it reports, for each, that
// the command runs (pid written) or that it could not start it. It returns
// one error (or nil) per id.
func (a *agent) launchMany(root string, ids []string, specs [][]byte) []error {
	errs := make([]error, len(ids))
	fill := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	self := a.env.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return fill(fmt.Errorf("finding the runner executable: %w", err))
		}
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fill(err)
	}
	defer devnull.Close()
	// The supervisor reports on this pipe (its fd 3), per id: "ok <id>"
	// once pid is written, or "error <id> <why>". Reading it is how
	// "start" waits, without polling the file system.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fill(err)
	}
	defer pr.Close()
	// The specs go to the supervisor's stdin, one JSON object per line in
	// the order of ids.
	sr, sw, err := os.Pipe()
	if err != nil {
		pw.Close()
		return fill(err)
	}
	args := append([]string{self}, a.env.SelfArgs...)
	args = append(args, "supervise", "--dir", root, "--ready-fd", "3", "--grace", a.env.KillGrace.String(), "--specs-stdin")
	args = append(args, ids...)
	cmd := &exec.Cmd{
		Path:       self,
		Args:       args,
		Dir:        "/",
		Stdin:      sr,
		Stdout:     devnull,
		Stderr:     devnull,
		ExtraFiles: []*os.File{pw},
		// A new session: no controlling terminal, and not in the process
		// group the SSH server signals when the session ends.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	pw.Close()
	sr.Close()
	if err != nil {
		sw.Close()
		return fill(fmt.Errorf("starting the supervisor %s: %w", self, err))
	}
	go func() {
		// A supervisor that dies early makes the writes fail (EPIPE);
		// the ready pipe tells why.
		bw := bufio.NewWriterSize(sw, 64*1024)
		for _, b := range specs {
			bw.Write(b)
			bw.WriteByte('\n')
		}
		bw.Flush()
		sw.Close()
	}()
	// Reap the supervisor if this process lives that long (tests, or a
	// long-lived batch); otherwise init adopts it when we exit.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	reported := make([]bool, len(ids))
	left := len(ids)
	// The supervisor reports each container as it goes: it has
	// startTimeout to make progress, not to start the whole batch.
	var rerr error
	rd := bufio.NewReaderSize(pr, 4096)
	for left > 0 {
		pr.SetReadDeadline(time.Now().Add(startTimeout))
		var line string
		line, rerr = rd.ReadString('\n')
		if rerr != nil {
			break
		}
		if len(line) > 64*1024 {
			rerr = errors.New("report line too long")
			break
		}
		verdict, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		id, msg, _ := strings.Cut(rest, " ")
		i, ok := index[id]
		if !ok || reported[i] {
			continue
		}
		switch verdict {
		case "ok": // sent once pid_start is written
			reported[i] = true
			left--
		case "error":
			reported[i] = true
			left--
			errs[i] = errors.New(msg)
		}
	}
	if left == 0 {
		return errs
	}
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		if left == len(ids) {
			// Nothing started: the supervisor is stuck. (Otherwise it
			// looks after the containers it did start; those it did not
			// report lose their directories below and cannot be claimed.)
			cmd.Process.Kill()
			waitExited(exited)
		}
		for i, id := range ids {
			if reported[i] {
				continue
			}
			if pr, err := readPIDRecord(filepath.Join(root, id)); err == nil && pr.pid > 1 {
				syscall.Kill(-pr.pid, syscall.SIGKILL)
			}
			errs[i] = fmt.Errorf("the supervisor did not start the command within %v; try again", startTimeout)
		}
		return errs
	}
	var werr error
	if len(ids) == 1 {
		werr = waitExited(exited)
	}
	for i, id := range ids {
		if reported[i] {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(root, id, fileError)); err == nil {
			errs[i] = errors.New(strings.TrimSpace(string(b)))
		} else {
			errs[i] = fmt.Errorf("the supervisor exited without starting the command (%v)", werr)
		}
	}
	return errs
}

func waitExited(ch <-chan error) error {
	select {
	case err := <-ch:
		return err
	case <-time.After(startTimeout):
		return errors.New("supervisor did not exit")
	}
}
