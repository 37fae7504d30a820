//go:build unix

package agent

import (
	"bufio"
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

// supervise runs "runner supervise --dir D --ready-fd N --grace G <id>...",
// the hidden verb "start" launches in a new session. For each id it runs the
// container's command in a session of its own, records pid, waits, and
// records the exit code (128+signal when a signal ended it) and the finish
// time. One supervisor may look after several containers (a batch of
// starts): it exits once all of them have ended. It reports "ok <id>" or
// "error <id> <why>" on the ready fd for each id once its command runs or
// could not be started. Its own stdout and stderr are /dev/null; a failure
// to start is also written to the container's error file.
func (a *agent) supervise(args []string) int {
	fl := flag.NewFlagSet("supervise", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	root := fl.String("dir", "", "state dir")
	readyFD := fl.Int("ready-fd", -1, "fd to report readiness on")
	grace := fl.Duration("grace", a.env.KillGrace, "TERM to KILL delay after max_run_time")
	specsStdin := fl.Bool("specs-stdin", false, "read the specs from stdin (one JSON object per line, in the order of the ids), not from spec.json")
	if err := fl.Parse(args); err != nil || fl.NArg() < 1 || *root == "" || !filepath.IsAbs(*root) {
		return a.fail(2, "usage: runner supervise --dir ABSDIR [--ready-fd N] [--grace D] <id>... (internal; run by start)")
	}
	ids := fl.Args()
	for _, id := range ids {
		if !safeID(id) {
			return a.fail(2, "runner supervise: invalid container id %q", id)
		}
	}
	var ready *os.File
	if *readyFD >= 0 {
		// Keep the ready pipe out of the commands, or "start" would see it
		// open as long as they run.
		syscall.CloseOnExec(*readyFD)
		ready = os.NewFile(uintptr(*readyFD), "ready")
	}
	// One line per container as soon as it is known, so that "start"
	// sees progress through a long batch.
	report := func(msg string) {
		if ready != nil {
			io.WriteString(ready, strings.ReplaceAll(msg, "\n", " ")+"\n")
		}
	}
	flushReady := func() {
		if ready != nil {
			ready.Close()
			ready = nil
		}
	}
	defer flushReady()

	// Pass termination signals sent to the supervisor on to the commands.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		for _, id := range ids {
			report("error " + id + " " + err.Error())
		}
		return 1
	}
	defer devnull.Close()
	self := pidRecord{spid: os.Getpid(), sstart: procStart(os.Getpid())}
	specs := make([][]byte, len(ids))
	if *specsStdin {
		// Read them all first: "start" writes them all before it reads
		// the ready pipe.
		dec := json.NewDecoder(bufio.NewReaderSize(os.Stdin, 64*1024))
		for i := range specs {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				break
			}
			specs[i] = raw
		}
	}
	// The supervisor's only children are the commands it starts, so
	// wait4(-1) sees each exit exactly once. While the batch starts, exits
	// are collected between starts without waiting: a batch of short
	// commands then shows them exited while the rest is still starting,
	// instead of running (list reads /proc for each running container).
	// Then one reaper goroutine waits for the rest.
	var live []*supervised
	byPID := make(map[int]*supervised, len(ids)) // started, not yet reaped
	// reap waits for a command to end (only looks, with WNOHANG) and
	// takes it out of byPID: nil and no error when none has ended yet.
	reap := func(options int) (*supervised, error) {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, options, nil)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil:
				return nil, err
			case pid <= 0:
				return nil, nil
			}
			if c := byPID[pid]; c != nil {
				delete(byPID, pid)
				c.status, c.signal = exitStatus(ws)
				return c, nil
			}
		}
	}
	for i, id := range ids {
		c, err := a.superviseStart(filepath.Join(*root, id), self, specs[i], *specsStdin, devnull)
		if err != nil {
			report("error " + id + " " + err.Error())
			continue
		}
		report("ok " + id)
		live = append(live, c)
		byPID[c.pid] = c
		if c.spec.HealthCheck != nil {
			a.startHealth(*root, c, *grace, devnull)
		}
		for len(byPID) > 0 {
			ended, _ := reap(syscall.WNOHANG)
			if ended == nil {
				break
			}
			ended.ended = true
			ended.finish(a)
		}
	}
	flushReady()
	if len(live) == 0 {
		return 1
	}

	left := len(byPID)
	done := make(chan *supervised, left)
	go func() { // owns byPID from here
		for len(byPID) > 0 {
			c, err := reap(0)
			if err != nil {
				// ECHILD: nothing left to wait for (cannot happen
				// while a command is unreaped). Report the rest as
				// ended with an unknown status.
				for _, c := range byPID {
					c.status = -1
					done <- c
				}
				return
			}
			done <- c
		}
	}()
	type timer struct {
		c        *supervised
		escalate bool
	}
	timers := make(chan timer, 2*len(live))
	for _, c := range live {
		if c.spec.MaxRunTime > 0 {
			time.AfterFunc(c.spec.MaxRunTime, func() { timers <- timer{c: c} })
		}
	}
	for left > 0 {
		select {
		case c := <-done:
			left--
			c.ended = true
			c.finish(a)
		case s := <-sigs:
			for _, c := range live {
				if !c.ended {
					syscall.Kill(-c.pid, s.(syscall.Signal))
				}
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
			c := t.c
			time.AfterFunc(*grace, func() { timers <- timer{c: c, escalate: true} })
		}
	}
	return 0
}

// supervised is one container a supervisor runs.
type supervised struct {
	dir     string
	spec    runner.Spec
	pid     int
	started time.Time
	rec     pidRecord // pid_start's line
	ended   bool
	status  int    // exit code, 128+signal, or -1 (set by the reaper)
	signal  string // the signal that ended it, "" if none (set by the reaper)
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
// time. The spec is specJSON when fromStdin is set, else dir/spec.json.
func (a *agent) superviseStart(dir string, self pidRecord, specJSON []byte, fromStdin bool, devnull *os.File) (*supervised, error) {
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
		return nil, errors.New(msg)
	}
	// A recycled directory keeps an empty stderr: no inode to allocate.
	if outs[1], err = openRetry(filepath.Join(dir, fileStderr), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND|syscall.O_CLOEXEC, 0o600); err != nil {
		return failed(127, (&fs.PathError{Op: "open", Path: filepath.Join(dir, fileStderr), Err: err}).Error())
	}
	var spec runner.Spec
	switch {
	case !fromStdin:
		spec, err = readSpecFile(dir)
	case specJSON == nil:
		err = errors.New("no spec on stdin")
	default:
		spec, err = decodeSpec(specJSON)
		if err == nil && spec.ID != filepath.Base(dir) {
			err = fmt.Errorf("spec id %q does not match the container id %q", spec.ID, filepath.Base(dir))
		}
	}
	if err != nil {
		return failed(127, "reading the spec: "+err.Error())
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
	c.rec.pid, c.rec.start, c.rec.started = c.pid, procStart(c.pid), c.started
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
