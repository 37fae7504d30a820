//go:build unix

package runner

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
func (w *worker) supervise(args []string) int {
	fl := flag.NewFlagSet("supervise", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	root := fl.String("dir", "", "state dir")
	readyFD := fl.Int("ready-fd", -1, "fd to report readiness on")
	grace := fl.Duration("grace", w.env.KillGrace, "TERM to KILL delay after max_run_time")
	specsStdin := fl.Bool("specs-stdin", false, "read the specs from stdin (one JSON object per line, in the order of the ids), not from spec.json")
	if err := fl.Parse(args); err != nil || fl.NArg() < 1 || *root == "" || !filepath.IsAbs(*root) {
		return w.fail(2, "usage: runner supervise --dir ABSDIR [--ready-fd N] [--grace D] <id>... (internal; run by start)")
	}
	ids := fl.Args()
	for _, id := range ids {
		if !safeID(id) {
			return w.fail(2, "runner supervise: invalid container id %q", id)
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
	var live []*supervised
	for i, id := range ids {
		c, err := w.superviseStart(filepath.Join(*root, id), self, specs[i], *specsStdin, devnull)
		if err != nil {
			report("error " + id + " " + err.Error())
			continue
		}
		report("ok " + id)
		live = append(live, c)
	}
	flushReady()
	if len(live) == 0 {
		return 1
	}

	done := make(chan *supervised, len(live))
	for _, c := range live {
		go func() {
			c.cmd.Wait()
			done <- c
		}()
	}
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
	left := len(live)
	for left > 0 {
		select {
		case c := <-done:
			left--
			c.ended = true
			c.finish(w)
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
			fmt.Fprintf(t.c.outs[1], "runner: max_run_time %v exceeded: sending TERM, then KILL after %v\n", t.c.spec.MaxRunTime, *grace)
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
	spec    Spec
	cmd     *exec.Cmd
	pid     int
	outs    [2]*os.File
	started time.Time
	rec     pidRecord // the pid file's line
	ended   bool
}

// superviseStart claims the container in dir (one supervisor per
// directory, ever: the first to create its stdout), starts its command and
// records its pid. self holds the supervisor's pid and start time. The spec
// is specJSON when fromStdin is set, else dir/spec.json.
func (w *worker) superviseStart(dir string, self pidRecord, specJSON []byte, fromStdin bool, devnull *os.File) (*supervised, error) {
	born := w.env.Now()
	c := &supervised{dir: dir, started: born}
	var err error
	if c.outs[0], err = os.OpenFile(filepath.Join(dir, fileStdout), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("claiming %s: %v", dir, err)
	}
	failed := func(code int, msg string) (*supervised, error) {
		for _, o := range c.outs {
			if o != nil {
				o.Close()
			}
		}
		writeSmall(filepath.Join(dir, fileError), []byte(msg+"\n"))
		rec := self
		rec.started = born
		writeSmall(filepath.Join(dir, fileExit), append(formatPIDRecord(rec), formatExitLine(code, w.env.Now())...))
		return nil, errors.New(msg)
	}
	if c.outs[1], err = os.OpenFile(filepath.Join(dir, fileStderr), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
		return failed(127, err.Error())
	}
	var spec Spec
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
	c.cmd = &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         workDir(envValue(env, "HOME")),
		Stdin:       devnull,
		Stdout:      c.outs[0],
		Stderr:      c.outs[1],
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := c.cmd.Start(); err != nil {
		code := 127
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			code = 126
		}
		return failed(code, fmt.Sprintf("cannot run %q: %v", argv[0], err))
	}
	c.pid = c.cmd.Process.Pid
	c.started = w.env.Now()
	c.rec = self
	c.rec.pid, c.rec.start, c.rec.started = c.pid, procStart(c.pid), c.started
	if err := errors.Join(
		writeSmall(filepath.Join(dir, filePIDStart), formatPIDRecord(c.rec)),
		writeSmall(filepath.Join(dir, filePID), []byte(strconv.Itoa(c.pid)+"\n")),
	); err != nil {
		syscall.Kill(-c.pid, syscall.SIGKILL)
		c.cmd.Wait()
		return failed(127, "recording the pid: "+err.Error())
	}
	return c, nil
}

// finish records the exit of c's command (already waited for).
func (c *supervised) finish(w *worker) {
	// Like a container runtime, end whatever the command left running in
	// its process group. The group id cannot have been reused while any
	// member is left.
	syscall.Kill(-c.pid, syscall.SIGKILL)
	for _, o := range c.outs {
		o.Close()
	}
	code := -1
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			code = ws.ExitStatus()
		case ws.Signaled():
			code = 128 + int(ws.Signal())
		}
	}
	// Append the exit line to pid_start, then rename it to exit: no new
	// inode (the cost that matters on ext4). Readers take a pid_start
	// with an exit line for an exited container.
	line := formatExitLine(code, w.env.Now())
	pidPath := filepath.Join(c.dir, filePIDStart)
	if err := appendSmall(pidPath, line); err != nil {
		writeSmall(filepath.Join(c.dir, fileExit), append(formatPIDRecord(c.rec), line...))
		return
	}
	os.Rename(pidPath, filepath.Join(c.dir, fileExit))
}

// commandLine returns the argv and environment a spec runs with: the
// command itself, or "docker run" of its image when docker is set. The
// environment is PATH and HOME, overridden and extended by the spec's env
// (passed as --env options to docker for an image). Nothing goes through a
// shell.
func commandLine(spec Spec, docker, home string) (argv, env []string) {
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
