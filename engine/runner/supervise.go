//go:build unix

package runner

import (
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

// supervise runs "runner supervise --dir D --ready-fd N --grace G <id>", the
// hidden verb "start" launches in a new session. It runs the container's
// command in a session of its own, records pid, waits, and records the
// exit code (128+signal when a signal ended it) and the finish time. It
// reports "ok" or "error: <why>" on the ready fd once the command runs or
// could not be started. Its own stdout and stderr are /dev/null; a failure
// to start is also written to the container's error file.
func (w *worker) supervise(args []string) int {
	fl := flag.NewFlagSet("supervise", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	root := fl.String("dir", "", "state dir")
	readyFD := fl.Int("ready-fd", -1, "fd to report readiness on")
	grace := fl.Duration("grace", w.env.KillGrace, "TERM to KILL delay after max_run_time")
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 || *root == "" || !filepath.IsAbs(*root) {
		return w.fail(2, "usage: runner supervise --dir ABSDIR [--ready-fd N] [--grace D] <id> (internal; run by start)")
	}
	id := fl.Arg(0)
	if !safeID(id) {
		return w.fail(2, "runner supervise: invalid container id %q", id)
	}
	var ready *os.File
	if *readyFD >= 0 {
		// Keep the ready pipe out of the command, or "start" would see it
		// open as long as the command runs.
		syscall.CloseOnExec(*readyFD)
		ready = os.NewFile(uintptr(*readyFD), "ready")
	}
	report := func(msg string) {
		if ready != nil {
			io.WriteString(ready, msg+"\n")
			ready.Close()
			ready = nil
		}
	}
	defer report("error: supervisor ended unexpectedly")

	dir := filepath.Join(*root, id)
	// Claim the container: one supervisor per directory, ever.
	self := fmt.Sprintf("%d %s\n", os.Getpid(), procStart(os.Getpid()))
	f, err := os.OpenFile(filepath.Join(dir, fileSupervisor), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		report("error: claiming " + dir + ": " + err.Error())
		return 1
	}
	_, err = io.WriteString(f, self)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		report("error: writing " + fileSupervisor + ": " + err.Error())
		return 1
	}
	failed := func(code int, msg string) int {
		writeFileAtomic(dir, fileError, []byte(msg+"\n"))
		writeFileAtomic(dir, fileFinishedAt, formatTime(w.env.Now()))
		writeFileAtomic(dir, fileExit, []byte(strconv.Itoa(code)+"\n"))
		report("error: " + msg)
		return 1
	}

	spec, err := readSpecFile(dir)
	if err != nil {
		return failed(127, "reading the spec: "+err.Error())
	}
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
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return failed(127, err.Error())
	}
	defer devnull.Close()
	var outs [2]*os.File
	for i, name := range []string{fileStdout, fileStderr} {
		if outs[i], err = os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return failed(127, err.Error())
		}
		defer outs[i].Close()
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         workDir(envValue(env, "HOME")),
		Stdin:       devnull,
		Stdout:      outs[0],
		Stderr:      outs[1],
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	// Pass termination signals sent to the supervisor on to the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		code := 127
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			code = 126
		}
		return failed(code, fmt.Sprintf("cannot run %q: %v", argv[0], err))
	}
	pid := cmd.Process.Pid
	if err := errors.Join(
		writeFileAtomic(dir, fileStartedAt, formatTime(w.env.Now())),
		writeFileAtomic(dir, filePIDStart, []byte(procStart(pid)+"\n")),
		writeFileAtomic(dir, filePID, []byte(strconv.Itoa(pid)+"\n")),
	); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return failed(127, "recording the pid: "+err.Error())
	}
	report("ok")

	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	var deadline, escalate <-chan time.Time
	if spec.MaxRunTime > 0 {
		t := time.NewTimer(spec.MaxRunTime)
		defer t.Stop()
		deadline = t.C
	}
wait:
	for {
		select {
		case <-done:
			break wait
		case s := <-sigs:
			syscall.Kill(-pid, s.(syscall.Signal))
		case <-deadline:
			deadline = nil
			fmt.Fprintf(outs[1], "runner: max_run_time %v exceeded: sending TERM, then KILL after %v\n", spec.MaxRunTime, *grace)
			syscall.Kill(-pid, syscall.SIGTERM)
			t := time.NewTimer(*grace)
			defer t.Stop()
			escalate = t.C
		case <-escalate:
			escalate = nil
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	// Like a container runtime, end whatever the command left running in
	// its process group. The group id cannot have been reused while any
	// member is left.
	syscall.Kill(-pid, syscall.SIGKILL)
	code := -1
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			code = ws.ExitStatus()
		case ws.Signaled():
			code = 128 + int(ws.Signal())
		}
	}
	writeFileAtomic(dir, fileFinishedAt, formatTime(w.env.Now()))
	if err := writeFileAtomic(dir, fileExit, []byte(strconv.Itoa(code)+"\n")); err != nil {
		return 1
	}
	return 0
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
