// Launching containers through supervisors fed their specs on stdin.

//go:build unix

package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// feeder is a supervisor (the hidden verb "supervise") as its launcher sees
// it: specs go to its stdin, one per line, and it reports on its ready
// pipe, per container, "ok <id>" once pid is written or "error <id> <why>".
// Reading that pipe is how a start waits, without polling the file system.
// "start" and "batch" feed one a single batch and close its stdin; "serve"
// keeps feeding the same ones frame after frame (feederPool).
type feeder struct {
	cmd    *exec.Cmd
	in     *os.File // its stdin; nil once retired
	ready  *os.File
	rd     *bufio.Reader
	exited chan struct{} // closed once it was reaped, werr set
	werr   error
	// started counts the containers it reported started, ever: one that
	// started none may be killed when stuck, any other never is.
	started int
}

// startFeeder starts a supervisor for containers under root.
func (a *agent) startFeeder(root string) (*feeder, error) {
	self := a.env.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the runner executable: %w", err)
		}
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	// The ready pipe is the supervisor's fd 3.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	args := append([]string{self}, a.env.SelfArgs...)
	args = append(args, "supervise", "--dir", root, "--ready-fd", "3", "--grace", a.env.KillGrace.String())
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
		pr.Close()
		sw.Close()
		return nil, fmt.Errorf("starting the supervisor %s: %w", self, err)
	}
	f := &feeder{cmd: cmd, in: sw, ready: pr, rd: bufio.NewReaderSize(pr, 4096), exited: make(chan struct{})}
	// Reap it if this process lives that long (tests, serve); otherwise
	// init adopts it when we exit.
	go func() {
		f.werr = cmd.Wait()
		close(f.exited)
	}()
	return f, nil
}

// hasExited reports whether the supervisor was reaped.
func (f *feeder) hasExited() bool {
	select {
	case <-f.exited:
		return true
	default:
		return false
	}
}

// waitExit waits a while for the supervisor to be reaped.
func (f *feeder) waitExit() (error, bool) {
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-f.exited:
		return f.werr, true
	case <-t.C:
		return errors.New("supervisor did not exit"), false
	}
}

// retire closes the supervisor's pipes: it sees the end of its stdin,
// looks after the containers it started until they end, then exits.
func (f *feeder) retire() {
	if f.in != nil {
		f.in.Close()
		f.ready.Close()
		f.in = nil
	}
}

// feed sends the specs of the containers ids (their directories exist
// under root) and waits until the supervisor reported on each. It returns
// one error (or nil) per id. ok is false when the supervisor died or was
// stuck: feed has then retired it (killed it, if it never started
// anything), and retry lists the ids it died without claiming, which a
// new supervisor may start.
func (f *feeder) feed(root string, ids []string, specs [][]byte) (errs []error, retry []int, ok bool) {
	errs = make([]error, len(ids))
	wrote := make(chan struct{})
	in := f.in
	go func() {
		defer close(wrote)
		// A supervisor that died makes the writes fail (EPIPE), one
		// that is retired makes them fail at once (closed); the ready
		// pipe tells which.
		bw := bufio.NewWriterSize(in, 64*1024)
		for _, b := range specs {
			bw.Write(b)
			bw.WriteByte('\n')
		}
		bw.Flush()
	}()
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	reported := make([]bool, len(ids))
	left := len(ids)
	// The supervisor reports each container as it goes: it has
	// startTimeout to make progress, not to start the whole batch.
	var rerr error
	for left > 0 {
		f.ready.SetReadDeadline(time.Now().Add(startTimeout))
		var line string
		line, rerr = f.rd.ReadString('\n')
		if rerr != nil {
			break
		}
		if len(line) > 64*1024 {
			rerr = errors.New("report line too long")
			break
		}
		verdict, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		id, msg, _ := strings.Cut(rest, " ")
		i, known := index[id]
		if !known || reported[i] {
			continue
		}
		switch verdict {
		case "ok": // sent once pid_start is written
			reported[i] = true
			left--
			f.started++
		case "error":
			reported[i] = true
			left--
			errs[i] = errors.New(msg)
		}
	}
	if left == 0 {
		<-wrote
		return errs, nil, true
	}
	timedOut := errors.Is(rerr, os.ErrDeadlineExceeded)
	if timedOut && f.started == 0 {
		// Nothing started: it is stuck, and looks after nothing.
		// (Otherwise it looks after the containers it did start;
		// those it did not report lose their directories and cannot
		// be claimed.)
		f.cmd.Process.Kill()
	}
	f.retire()
	<-wrote
	werr, exited := f.waitExit()
	for i, id := range ids {
		if reported[i] {
			continue
		}
		dir := filepath.Join(root, id)
		errs[i] = unreported(dir, timedOut, werr)
		if !timedOut && exited && unclaimed(dir) {
			retry = append(retry, i)
		}
	}
	return errs, retry, false
}

// unreported is the error of a container its supervisor did not report
// on. If its command runs, it is killed: the caller removes the directory,
// and nothing would look after it.
func unreported(dir string, timedOut bool, werr error) error {
	if pr, err := readPIDRecord(dir); err == nil && pr.pid > 1 && pr.exit == nil && alive(pr.pid, pr.start) {
		syscall.Kill(-pr.pid, syscall.SIGKILL)
	}
	if timedOut {
		return fmt.Errorf("the supervisor did not start the command within %v; try again", startTimeout)
	}
	if b, err := os.ReadFile(filepath.Join(dir, fileError)); err == nil {
		return errors.New(strings.TrimSpace(string(b)))
	}
	return fmt.Errorf("the supervisor exited without starting the command (%v)", werr)
}

// unclaimed reports whether no supervisor claimed dir (created its
// stdout): then another may.
func unclaimed(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, fileStdout))
	return errors.Is(err, os.ErrNotExist)
}

// launchMany starts one supervisor for the containers ids (their
// directories exist under root; specs holds their specs as JSON) and waits
// until it reports, for each, that the command runs (pid written) or that
// it could not start it. It returns one error (or nil) per id.
func (a *agent) launchMany(root string, ids []string, specs [][]byte) []error {
	f, err := a.startFeeder(root)
	if err != nil {
		errs := make([]error, len(ids))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	errs, _, ok := f.feed(root, ids, specs)
	if ok {
		f.retire()
	}
	return errs
}

// feederPool is the supervisors of one "serve", kept across its frames:
// slot k starts share k of each frame (splitShares). Starting a
// supervisor per frame cost a process start of the runner binary (the Go
// runtime and the init of every package in it) for each one, several per
// frame. They outlive serve like any supervisor: when it exits, their
// stdin ends, and each exits once its containers have ended.
type feederPool struct {
	slots []*feeder
}

// launch starts the containers ids as launchParallel does, each share
// under its slot's supervisor.
func (p *feederPool) launch(a *agent, root string, ids []string, specs [][]byte) []error {
	shares := splitShares(len(ids), runtime.NumCPU())
	for len(p.slots) < len(shares) {
		p.slots = append(p.slots, nil)
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for k, sh := range shares {
		// Each goroutine has slot k to itself.
		wg.Go(func() {
			copy(errs[sh[0]:sh[1]], p.launchShare(a, root, k, ids[sh[0]:sh[1]], specs[sh[0]:sh[1]]))
		})
	}
	wg.Wait()
	return errs
}

// launchShare starts ids under slot k's supervisor, starting one when the
// slot has none or its supervisor died. When the supervisor dies without
// claiming some of them, a new one starts those.
func (p *feederPool) launchShare(a *agent, root string, k int, ids []string, specs [][]byte) []error {
	errs := make([]error, len(ids))
	todo := make([]int, len(ids))
	for i := range todo {
		todo[i] = i
	}
	for try := 0; try < 2 && len(todo) > 0; try++ {
		f := p.slots[k]
		if f != nil && f.hasExited() {
			f.retire()
			f = nil
		}
		if f == nil {
			var err error
			if f, err = a.startFeeder(root); err != nil {
				for _, i := range todo {
					errs[i] = err
				}
				p.slots[k] = nil
				return errs
			}
			p.slots[k] = f
		}
		subIDs, subSpecs := make([]string, len(todo)), make([][]byte, len(todo))
		for j, i := range todo {
			subIDs[j], subSpecs[j] = ids[i], specs[i]
		}
		subErrs, retry, ok := f.feed(root, subIDs, subSpecs)
		for j, i := range todo {
			errs[i] = subErrs[j]
		}
		if ok {
			return errs
		}
		p.slots[k] = nil
		next := make([]int, len(retry))
		for j, r := range retry {
			next[j] = todo[r]
		}
		todo = next
	}
	return errs
}

// close retires every supervisor of the pool.
func (p *feederPool) close() {
	for _, f := range p.slots {
		if f != nil {
			f.retire()
		}
	}
	p.slots = nil
}
