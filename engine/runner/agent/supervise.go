// The supervisor: starts each container, waits for it, records its exit.

//go:build unix

package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dispatch-tui/engine/runner"
)

// supervise runs "runner supervise --dir D --ready-fd N --grace G", the
// hidden verb that "start", "batch" and "serve" launch in a new session
// (launch.go). It reads specs on stdin, one JSON object per line, and
// starts each as it arrives in its directory D/<id>, which "start" made: it
// runs the command in a session of its own, records pid, waits, and
// records the exit code (128+signal when a signal ended it) and the finish
// time. For each spec it reports "ok <id>" (pid written) or "error <id>
// <why>" on the ready fd. It exits once stdin is at its end and all its
// commands have ended: "start" and "batch" close its stdin after one batch,
// "serve" keeps feeding it frame after frame. Its own stdout and stderr
// are /dev/null; a failure to start is also written to the container's
// error file.
func (a *agent) supervise(args []string) int {
	fl := flag.NewFlagSet("supervise", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	root := fl.String("dir", "", "state dir")
	readyFD := fl.Int("ready-fd", -1, "fd to report readiness on")
	grace := fl.Duration("grace", a.env.KillGrace, "TERM to KILL delay after max_run_time")
	if err := fl.Parse(args); err != nil || fl.NArg() != 0 || *root == "" || !filepath.IsAbs(*root) {
		return a.fail(2, "usage: runner supervise --dir ABSDIR [--ready-fd N] [--grace D], specs on stdin (internal; run by start and serve)")
	}
	var ready *os.File
	if *readyFD >= 0 {
		// Keep the ready pipe out of the commands, or its reader would
		// see it open as long as they run.
		syscall.CloseOnExec(*readyFD)
		ready = os.NewFile(uintptr(*readyFD), "ready")
	}
	// One line per container as soon as it is known, so that the
	// launcher sees progress through a long batch.
	report := func(msg string) {
		if ready != nil {
			io.WriteString(ready, strings.ReplaceAll(msg, "\n", " ")+"\n")
		}
	}
	closeReady := func() {
		if ready != nil {
			ready.Close()
			ready = nil
		}
	}
	defer closeReady()

	// Pass termination signals sent to the supervisor on to the commands.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 1 // the launcher sees the ready pipe closed with nothing reported
	}
	defer devnull.Close()
	self := pidRecord{spid: os.Getpid(), sstart: procStart(os.Getpid()), boot: bootID()}

	// The loop below owns byPID and the containers; the reader, the
	// reaper and the timers only send to it.
	stop := make(chan struct{})
	defer close(stop)
	lines := make(chan []byte)
	go readSpecLines(os.Stdin, lines, stop)
	kick := make(chan struct{}, 1)
	reaped := make(chan reapedChild)
	go reapChildren(kick, reaped, stop)
	kickReaper := func() {
		select {
		case kick <- struct{}{}:
		default: // one is pending: the reaper calls wait4 again after it
		}
	}
	timers := make(chan runTimer)
	arm := func(d time.Duration, t runTimer) *time.Timer {
		return time.AfterFunc(d, func() {
			select {
			case timers <- t:
			case <-stop:
			}
		})
	}
	byPID := make(map[int]*supervised) // started, not yet reaped
	started := 0
	for lines != nil || len(byPID) > 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				closeReady() // nothing more to report
				continue
			}
			c, id, err := a.superviseLine(*root, self, line, devnull)
			if id == "" {
				continue // no id to report it under (the launcher never sends such a line)
			}
			if err != nil {
				report("error " + id + " " + err.Error())
				continue
			}
			report("ok " + id)
			started++
			// The reaper may see the command's exit before this loop
			// reads it, never before the command is in byPID.
			byPID[c.pid] = c
			kickReaper()
			if c.spec.MaxRunTime > 0 {
				c.timer = arm(c.spec.MaxRunTime, runTimer{c: c})
			}
			if c.spec.HealthCheck != nil {
				a.startHealth(*root, c, *grace, devnull)
				kickReaper()
			}
		case r := <-reaped:
			c := byPID[r.pid]
			if c == nil {
				continue // a health checker, or a command whose start failed
			}
			delete(byPID, r.pid)
			c.status, c.signal = exitStatus(r.ws)
			c.ended = true
			if c.timer != nil {
				c.timer.Stop()
			}
			c.finish(a)
		case s := <-sigs:
			for _, c := range byPID {
				syscall.Kill(-c.pid, s.(syscall.Signal))
			}
		case t := <-timers:
			if t.c.ended {
				continue
			}
			if t.escalate {
				syscall.Kill(-t.c.pid, syscall.SIGKILL)
				continue
			}
			appendSmall(filepath.Join(t.c.dir, fileStderr), fmt.Appendf(nil, "runner: max_run_time %v exceeded: sending TERM, then KILL after %v\n", t.c.spec.MaxRunTime, *grace))
			syscall.Kill(-t.c.pid, syscall.SIGTERM)
			t.c.timer = arm(*grace, runTimer{c: t.c, escalate: true})
		}
	}
	if started == 0 {
		return 1
	}
	return 0
}

// runTimer is a max_run_time timer that fired: TERM, or KILL once the
// grace has passed too.
type runTimer struct {
	c        *supervised
	escalate bool
}

// superviseLine starts the container of one spec line in its directory
// under root. id is "" when the line names no valid id.
func (a *agent) superviseLine(root string, self pidRecord, line []byte, devnull *os.File) (c *supervised, id string, err error) {
	spec, specErr := decodeSpec(line)
	id = spec.ID
	if specErr != nil {
		// Still claim the directory and record why, under the id the
		// line has if any.
		var head struct {
			ID string `json:"id"`
		}
		json.Unmarshal(line, &head)
		id = head.ID
	}
	if !safeID(id) {
		return nil, "", nil
	}
	c, err = a.superviseStart(filepath.Join(root, id), self, spec, specErr, devnull)
	return c, id, err
}

// readSpecLines sends each non-empty line of r on lines and closes lines
// at the end of r.
func readSpecLines(r io.Reader, lines chan<- []byte, stop <-chan struct{}) {
	defer close(lines)
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			select {
			case lines <- line:
			case <-stop:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// reapedChild is a child that wait4 reaped, with its status.
type reapedChild struct {
	pid int
	ws  syscall.WaitStatus
}

// reapChildren waits for the supervisor's children and sends each one's
// end on out. The supervisor's only children are the commands it starts
// (and their health checkers, whose own checks are not its children), so
// wait4(-1) sees each command's exit exactly once. With no child, wait4
// fails at once (ECHILD): it then waits for a kick, sent after each start,
// instead of spinning.
func reapChildren(kick <-chan struct{}, out chan<- reapedChild, stop <-chan struct{}) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			select {
			case <-kick:
				continue
			case <-stop:
				return
			}
		}
		select {
		case out <- reapedChild{pid: pid, ws: ws}:
		case <-stop:
			return
		}
	}
}

// supervised is one container a supervisor runs.
type supervised struct {
	dir     string
	spec    runner.Spec
	pid     int
	started time.Time
	rec     pidRecord // pid_start's line
	ended   bool
	status  int         // exit code, 128+signal, or -1
	signal  string      // the signal that ended it, "" if none
	timer   *time.Timer // max_run_time's, while it runs
}

// exitStatus is a wait status as the container's exit code (the code, or
// 128+signal when a signal ended it) and the name of that signal: a command
// that exits 143 by itself is told apart from one killed by TERM.
func exitStatus(ws syscall.WaitStatus) (int, string) {
	switch {
	case ws.Exited():
		return ws.ExitStatus(), ""
	case ws.Signaled():
		return 128 + int(ws.Signal()), signalName(ws.Signal())
	}
	return -1, ""
}

// signalName is a signal's name without "SIG" for the common ones, else
// its number.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGHUP:
		return "HUP"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGQUIT:
		return "QUIT"
	case syscall.SIGABRT:
		return "ABRT"
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGSEGV:
		return "SEGV"
	case syscall.SIGPIPE:
		return "PIPE"
	case syscall.SIGALRM:
		return "ALRM"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGUSR1:
		return "USR1"
	case syscall.SIGUSR2:
		return "USR2"
	}
	return strconv.Itoa(int(sig))
}

// superviseStart claims the container in dir (one supervisor per
// directory, ever: the first to create its stdout), starts its command and
// records its pid in pid_start. self holds the supervisor's pid and start
// time; spec is the container's, or specErr says why there is none.
func (a *agent) superviseStart(dir string, self pidRecord, spec runner.Spec, specErr error, devnull *os.File) (*supervised, error) {
	born := a.env.Now()
	c := &supervised{dir: dir, started: born}
	// The command's stdout and stderr. The supervisor closes its copies as
	// soon as the command runs: every open descriptor is one more to copy
	// and close in each later fork+exec of the batch.
	outs := [2]int{-1, -1}
	closeOuts := func() {
		for i, fd := range outs {
			if fd >= 0 {
				syscall.Close(fd)
				outs[i] = -1
			}
		}
	}
	defer closeOuts()
	var err error
	if outs[0], err = openFresh(filepath.Join(dir, fileStdout), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_APPEND|syscall.O_CLOEXEC, 0o600); err != nil {
		return nil, fmt.Errorf("claiming %s: %v", dir, err)
	}
	failed := func(code int, msg string) (*supervised, error) {
		// Also in the container's stderr: when the reply of the start
		// is lost, "list" shows the container exited with code, and
		// its logs are all anyone sees of why.
		if outs[1] >= 0 {
			writeAll(outs[1], []byte(stderrPrefix+msg+"\n"))
		}
		closeOuts()
		writeSmall(filepath.Join(dir, fileError), []byte(msg+"\n"))
		rec := self
		rec.started = born
		writeSmall(filepath.Join(dir, fileExit), append(formatPIDRecord(rec), formatExitLine(code, a.env.Now(), "")...))
		announceExit(dir)
		return nil, errors.New(msg)
	}
	// A recycled directory keeps an empty stderr: no inode to allocate.
	if outs[1], err = openRetry(filepath.Join(dir, fileStderr), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND|syscall.O_CLOEXEC, 0o600); err != nil {
		return failed(127, (&fs.PathError{Op: "open", Path: filepath.Join(dir, fileStderr), Err: err}).Error())
	}
	if specErr != nil {
		return failed(127, "reading the spec: "+specErr.Error())
	}
	c.spec = spec
	docker := ""
	if spec.Image != "" {
		if docker, err = exec.LookPath("docker"); err != nil {
			return failed(127, "image given but docker is not installed (install docker on the instance, or submit without an image)")
		}
	}
	argv, env := commandLine(spec, docker, os.Getenv("HOME"))
	path, err := lookPath(argv[0], envValue(env, "PATH"))
	if err != nil {
		return failed(127, err.Error())
	}
	// syscall.ForkExec rather than os/exec: no pidfd per command (one
	// reaper waits for all of them) and no goroutine per command.
	forkTick, tickOK := bootTick()
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   workDir(envValue(env, "HOME")),
		Env:   env,
		Files: []uintptr{devnull.Fd(), uintptr(outs[0]), uintptr(outs[1])},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		code := 127
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			code = 126
		}
		return failed(code, fmt.Sprintf("cannot run %q: exec %s: %v", argv[0], path, err))
	}
	closeOuts()
	c.pid = pid
	c.started = a.env.Now()
	c.rec = self
	c.rec.pid, c.rec.start, c.rec.started = c.pid, a.starts.start(c.pid, forkTick, tickOK), c.started
	c.rec.health = spec.HealthCheck != nil
	if err := writeRecord(filepath.Join(dir, filePIDStart), formatPIDRecord(c.rec)); err != nil {
		syscall.Kill(-c.pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(c.pid, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
		return failed(127, "recording the pid: "+err.Error())
	}
	return c, nil
}

// stderrPrefix starts the lines the runner itself writes to a container's
// stderr.
const stderrPrefix = "dispatch-tui runner: "

// writeAll writes b to fd, retrying short and interrupted writes; errors
// are dropped (the error file records the same message).
func writeAll(fd int, b []byte) {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		b = b[n:]
	}
}

// finish records the exit of c's command (already waited for).
func (c *supervised) finish(a *agent) {
	// Like a container runtime, end whatever the command left running in
	// its process group. The group id cannot have been reused while any
	// member is left.
	syscall.Kill(-c.pid, syscall.SIGKILL)
	code := c.status
	// The exit line goes after the pid record in pid_start: no new inode
	// and no rename (the costs that matter on ext4), and list reads one
	// file for an exited container.
	line := formatExitLine(code, a.env.Now(), c.signal)
	if err := appendSmall(filepath.Join(c.dir, filePIDStart), line); err != nil {
		writeSmall(filepath.Join(c.dir, fileExit), append(formatPIDRecord(c.rec), line...))
	}
	announceExit(c.dir)
}

// commandLine returns the argv and environment a spec runs with: the
// command itself, or "docker run" of its image when docker is set. The
// environment is PATH and HOME, overridden and extended by the spec's env
// (passed as --env options to docker for an image). Nothing goes through a
// shell.
func commandLine(spec runner.Spec, docker, home string) (argv, env []string) {
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	base := map[string]string{"PATH": basePATH}
	if home != "" {
		base["HOME"] = home
	}
	if docker != "" {
		argv = []string{docker, "run", "--rm", "--name=" + spec.ID}
		for _, k := range keys {
			argv = append(argv, "--env="+k+"="+spec.Env[k])
		}
		argv = append(argv, spec.Image)
		argv = append(argv, spec.Command...)
	} else {
		argv = append([]string(nil), spec.Command...)
		for k, v := range spec.Env {
			base[k] = v
		}
	}
	names := make([]string, 0, len(base))
	for k := range base {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+base[k])
	}
	return argv, env
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds file in the directories of path (the command's PATH, not
// the runner's). Names with a slash are used as they are; relative PATH
// entries are skipped.
func lookPath(file, path string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("cannot run %q: not found in PATH %s (give an absolute path, or set PATH in the env)", file, path)
}

// workDir is the command's working directory: home when it is a
// directory, else "/".
func workDir(home string) string {
	if home != "" {
		if fi, err := os.Stat(home); err == nil && fi.IsDir() {
			return home
		}
	}
	return "/"
}
