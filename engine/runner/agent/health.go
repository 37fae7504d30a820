// Running a container's health checks beside it, and recording their outcome.

//go:build unix

package agent

// Health checks (runner.HealthCheck). The supervisor starts, beside each
// container that has one, the hidden verb "runner health --dir D --grace G
// <id>" with the spec on its stdin: a process of its own, so that the
// checks' children are not the supervisor's (whose wait4(-1) reaps only
// the containers it starts) and a slow check never holds up the exits it
// records. It runs the check every interval with the container's
// environment and working directory ("docker exec" into it for an image),
// writes the result to the container's health file, and after retries
// failures in a row marks the container killed for it, sends TERM to its
// process group and KILL after the grace. It exits once the container has
// ended. pid_start's "h" field tells list to read the health file.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"dispatch-tui/engine/runner"
)

const (
	// fileHealth holds the health record (healthRecord as JSON); written
	// to fileHealthTmp and renamed, so a reader sees a whole one.
	fileHealth    = "health"
	fileHealthTmp = "health~"
)

// healthRecord is the health file's content.
type healthRecord struct {
	Health runner.Health `json:"health"`
	// Killed: the runner killed the container for failing its checks,
	// so its exit's EndReason() is unhealthy (copied to Health.Killed).
	Killed bool `json:"killed,omitempty"`
}

// checkResult is the outcome of one run of the check command.
type checkResult struct {
	ok     bool
	result string // "ok", "exit status N", "timed out after D", or why it could not run
	output string // the end of its output
}

// healthDeps are the health loop's ties to the world, so that tests can
// drive it step by step on a clock of their own.
type healthDeps struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	// check runs the command once, cut off after timeout.
	check func(timeout time.Duration) checkResult
	// alive reports whether the container's command still runs.
	alive func() bool
	// ended is closed once the container has ended (nil: never), so that
	// the checker exits then, not up to an interval later.
	ended <-chan struct{}
	// signal sends sig to the container's process group.
	signal func(sig syscall.Signal)
	// record writes the health file.
	record func(rec healthRecord)
	grace  time.Duration
}

// healthLoop runs hc against one container until it ends, or until retries
// checks in a row failed: then it records the container unhealthy and
// killed, and kills it (TERM, then KILL after the grace). The first check
// runs one interval after the start.
func healthLoop(hc runner.HealthCheck, d healthDeps) {
	rec := healthRecord{Health: runner.Health{State: runner.HealthStarting}}
	d.record(rec)
	for {
		select {
		case <-d.after(hc.Interval):
		case <-d.ended:
			return
		}
		if !d.alive() {
			return
		}
		res := d.check(hc.Timeout)
		if !d.alive() {
			return // it ended meanwhile: its own exit says how
		}
		h := &rec.Health
		h.LastCheck, h.LastResult, h.LastOutput = d.now().UTC(), res.result, res.output
		if res.ok {
			h.State, h.Failures = runner.HealthHealthy, 0
			d.record(rec)
			continue
		}
		h.Failures++
		if h.Failures < hc.Retries {
			d.record(rec) // starting or healthy until retries fail
			continue
		}
		h.State, rec.Killed = runner.HealthUnhealthy, true
		d.record(rec) // before the kill: list must never see the exit without it
		d.signal(syscall.SIGTERM)
		<-d.after(d.grace)
		if d.alive() {
			d.signal(syscall.SIGKILL)
		}
		return
	}
}

// health is the hidden verb "runner health --dir D --grace G <id>", spec
// JSON on stdin.
func (a *agent) health(args []string, stdin io.Reader) int {
	fl := flag.NewFlagSet("health", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	root := fl.String("dir", "", "state dir")
	grace := fl.Duration("grace", a.env.KillGrace, "TERM to KILL delay")
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 || *root == "" || !filepath.IsAbs(*root) || !safeID(fl.Arg(0)) {
		return a.fail(2, "usage: runner health --dir ABSDIR [--grace D] <id> (internal; run by the supervisor)")
	}
	id := fl.Arg(0)
	dir := filepath.Join(*root, id)
	spec, err := readSpec(stdin, id)
	if err != nil || spec.HealthCheck == nil {
		return a.fail(2, "runner health %s: no health check in the spec (%v)", id, err)
	}
	pr, err := readPIDRecord(dir)
	if err != nil {
		return a.fail(1, "runner health %s: %v", id, err)
	}
	argv, env, wd := healthCommand(spec)
	mine := func() bool {
		// The directory may be reused by a later attempt of the same id
		// once this one is forgotten: never write into that one's.
		cur, err := readPIDRecord(dir)
		return err == nil && cur.pid == pr.pid && cur.start == pr.start
	}
	isAlive := func() bool { return alive(pr.pid, pr.start) && mine() }
	// The container is no child of ours: look every second whether it
	// ended, so that no checker outlives its container by an interval.
	ended := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if !isAlive() {
					close(ended)
					return
				}
			}
		}
	}()
	healthLoop(*spec.HealthCheck, healthDeps{
		now:   a.env.Now,
		after: time.After,
		check: func(timeout time.Duration) checkResult { return runCheck(argv, env, wd, timeout) },
		alive: isAlive,
		ended: ended,
		signal: func(sig syscall.Signal) {
			if pr.pid > 1 && alive(pr.pid, pr.start) {
				syscall.Kill(-pr.pid, sig)
			}
		},
		record: func(rec healthRecord) {
			if mine() {
				writeHealth(dir, rec)
			}
		},
		grace: *grace,
	})
	return 0
}

// healthCommand is the argv, environment and working directory of spec's
// check: the container's own, or "docker exec" into its container.
func healthCommand(spec runner.Spec) (argv, env []string, dir string) {
	hc := spec.HealthCheck
	if spec.Image != "" {
		docker, err := exec.LookPath("docker")
		if err != nil {
			docker = "docker"
		}
		argv = append([]string{docker, "exec", spec.ID}, hc.Command...)
		_, env = commandLine(runner.Spec{ID: spec.ID, Command: hc.Command}, "", os.Getenv("HOME"))
		return argv, env, "/"
	}
	_, env = commandLine(spec, "", os.Getenv("HOME"))
	return append([]string(nil), hc.Command...), env, workDir(envValue(env, "HOME"))
}

// runCheck runs argv once in a process group of its own, killed whole when
// timeout passes.
func runCheck(argv, env []string, dir string, timeout time.Duration) checkResult {
	path, err := lookPath(argv[0], envValue(env, "PATH"))
	if err != nil {
		return checkResult{result: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := &tailBuffer{max: runner.MaxHealthOutput}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir, Stdout: out, Stderr: out,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		return checkResult{result: fmt.Sprintf("cannot run %q: %v", argv[0], err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	timedOut := false
	select {
	case werr = <-done:
	case <-ctx.Done():
		timedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		werr = <-done
	}
	res := checkResult{output: out.text()}
	var ee *exec.ExitError
	switch {
	case timedOut:
		res.result = "timed out after " + timeout.String()
	case werr == nil:
		res.ok, res.result = true, "ok"
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.result = "killed by signal " + signalName(ws.Signal())
		} else {
			res.result = "exit status " + strconv.Itoa(ee.ExitCode())
		}
	default:
		res.result = werr.Error()
	}
	return res
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// text is the kept output as valid UTF-8 without surrounding space, at
// most max bytes.
func (t *tailBuffer) text() string {
	b := bytes.TrimSpace(t.buf)
	if len(b) > t.max {
		b = b[len(b)-t.max:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// writeHealth replaces the container's health file.
func writeHealth(dir string, rec healthRecord) error {
	b, err := json.Marshal(&rec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, fileHealthTmp)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, fileHealth))
}

// readHealth reads the container's health file; a container whose checker
// has not written it yet is starting.
func readHealth(d ctrDir) healthRecord {
	b, err := d.read(fileHealth)
	var rec healthRecord
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Health.State == "" {
		return healthRecord{Health: runner.Health{State: runner.HealthStarting}}
	}
	return rec
}

// startHealth starts the health checker of c (which has a health check)
// as a child of the supervisor, in a session of its own, the spec on its
// stdin. An error is recorded in the container's stderr: the container
// runs on unchecked, and its health stays "starting".
func (a *agent) startHealth(root string, c *supervised, grace time.Duration, devnull *os.File) {
	fail := func(err error) {
		appendSmall(filepath.Join(c.dir, fileStderr), []byte(stderrPrefix+"cannot start the health check: "+err.Error()+"\n"))
	}
	self := a.env.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			fail(err)
			return
		}
	}
	body, err := json.Marshal(&c.spec)
	if err != nil {
		fail(err)
		return
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		fail(err)
		return
	}
	defer pr.Close()
	args := append([]string{self}, a.env.SelfArgs...)
	args = append(args, "health", "--dir", root, "--grace", grace.String(), c.spec.ID)
	_, err = syscall.ForkExec(self, args, &syscall.ProcAttr{
		Dir:   "/",
		Env:   os.Environ(),
		Files: []uintptr{pr.Fd(), devnull.Fd(), devnull.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		pw.Close()
		fail(err)
		return
	}
	// The checker reads its spec first thing; a spec larger than the
	// pipe's buffer waits for that. If it died first, the write fails.
	pw.Write(body)
	pw.Close()
}

// addHealth fills st's health from the container's health file when its
// pid record says it has a health check, with Killed when the checker
// killed it.
func addHealth(d ctrDir, pr pidRecord, st *runner.Status) {
	if !pr.health {
		return
	}
	rec := readHealth(d)
	rec.Health.Killed = rec.Killed
	st.Health = &rec.Health
}
