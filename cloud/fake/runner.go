// The in-memory runner: the commands it understands and the runner verbs it answers.

package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// CmdName is argv[0] of the commands Cmd builds.
const CmdName = "fake-run"

// IgnoreTerm, as any argument of a container's command, makes the in-memory
// runner ignore "kill --signal TERM" for it.
const IgnoreTerm = "ignore-term"

// Cmd returns a container command the in-memory runner understands: it runs
// for d of clock time, then exits with exitCode. Append IgnoreTerm to make
// it ignore TERM.
//
// The in-memory runner also understands ["true"] (exits 0 at once),
// ["false"] (exits 1 at once), ["echo", ARGS...] (writes ARGS on one line
// of its log, exits 0 at once) and ["sleep", "N"] (N seconds, then 0); any
// other command runs until killed.
func Cmd(d time.Duration, exitCode int) []string {
	return []string{CmdName, d.String(), strconv.Itoa(exitCode)}
}

// CmdOutput is Cmd for a container that also writes about n bytes of
// output, in lines of outputLine bytes (tests of large outputs).
func CmdOutput(d time.Duration, exitCode, n int) []string {
	return append(Cmd(d, exitCode), OutputArg+strconv.Itoa(n))
}

// OutputArg, followed by a byte count, as an argument of a Cmd command
// makes the container write that much output.
const OutputArg = "output="

// outputLine is the length of the filler lines CmdOutput's containers write.
const outputLine = 1024

// filler returns the filler lines a command asks for with OutputArg.
func filler(argv []string) []string {
	var out []string
	for _, a := range argv {
		v, ok := strings.CutPrefix(a, OutputArg)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		for i := 0; i*outputLine < n; i++ {
			line := fmt.Sprintf("fake: output %d ", i)
			out = append(out, line+strings.Repeat("x", max(outputLine-1-len(line), 0)))
		}
	}
	return out
}

// Unrunnable is a command the in-memory runner cannot execute: its start
// is refused, as the real runner refuses a command that does not exist.
const Unrunnable = "/nonexistent/fake-command"

// Exit codes "runner list" reports for killed containers.
const (
	ExitTerm = 128 + 15
	ExitKill = 128 + 9
)

// forever marks a container that runs until killed.
const forever = time.Duration(-1)

// ctr is one container in an instance's in-memory runner.
type ctr struct {
	spec       runner.Spec
	pid        int
	started    time.Time
	dur        time.Duration // forever: runs until killed
	exitCode   int
	ignoreTerm bool
	killed     bool
	killedAt   time.Time
	killCode   int
	killSignal string // the signal that ended it ("TERM", "KILL")
	unrecorded bool   // killed with its supervisor: exit -1, no finish time, lost
	crash      bool
	crashAt    time.Time
	health     *healthSim // nil: no health check (health.go)
}

// behaviour derives a command's runtime and exit code.
func behaviour(argv []string) (dur time.Duration, code int) {
	switch path.Base(argv[0]) {
	case CmdName:
		if len(argv) < 3 {
			return 0, 2
		}
		d, err := time.ParseDuration(argv[1])
		if err != nil || d < 0 {
			return 0, 2
		}
		c, err := strconv.Atoi(argv[2])
		if err != nil {
			return 0, 2
		}
		return d, c
	case "true", "echo":
		return 0, 0
	case "false":
		return 0, 1
	case "sleep":
		if len(argv) < 2 {
			return 0, 1
		}
		f, err := strconv.ParseFloat(argv[1], 64)
		if err != nil || f < 0 {
			return 0, 1
		}
		return time.Duration(f * float64(time.Second)), 0
	}
	return forever, 0
}

// exit returns when the container exits (or exited), if it ever does on its own
// or was killed.
func (c *ctr) exit() (at time.Time, code int, ok bool) {
	if c.killed {
		return c.killedAt, c.killCode, true
	}
	if c.dur != forever {
		return c.started.Add(c.dur), c.exitCode, true
	}
	return time.Time{}, 0, false
}

// signal delivers TERM or KILL (whoever sends it): it ends the container,
// unless it is TERM and the container ignores TERM.
func (c *ctr) signal(now time.Time, sig string) {
	if sig == runner.SignalTerm && c.ignoreTerm {
		return
	}
	c.killed, c.killedAt, c.killCode, c.killSignal = true, now, ExitTerm, runner.SignalTerm
	if sig == runner.SignalKill {
		c.killCode, c.killSignal = ExitKill, runner.SignalKill
	}
}

// status returns the container's status at now, and gone if the runner has
// lost it (crash while it was still running).
func (c *ctr) status(now time.Time) (st runner.Status, gone bool) {
	at, code, ok := c.exit()
	uAt, uCode, uSig, unhealthy := c.unhealthyEnd()
	if unhealthy && (!ok || uAt.Before(at)) {
		at, code, ok = uAt, uCode, true
	} else {
		unhealthy = false
	}
	if c.crash && !now.Before(c.crashAt) && (!ok || at.After(c.crashAt)) {
		return runner.Status{}, true
	}
	st = runner.Status{ID: c.spec.ID, PID: c.pid, State: runner.StateRunning, StartedAt: c.started}
	end := now
	if ok && !now.Before(at) {
		end = at
		st.State = runner.StateExited
		st.ExitCode = code
		if c.killed && !c.unrecorded {
			st.Signal = c.killSignal
		}
		if unhealthy {
			st.Signal = uSig
		}
		if c.unrecorded {
			st.Lost = runner.LostKilled
		} else {
			st.FinishedAt = at
		}
	}
	st.Health = c.healthAt(end)
	return st, false
}

// list prunes crashed containers and returns the rest's statuses sorted by
// id. d.mu must be held.
func (d *Driver) list(s *instState, now time.Time) []runner.Status {
	out := make([]runner.Status, 0, len(s.containers))
	for id, c := range s.containers {
		st, gone := c.status(now)
		if gone {
			delete(s.containers, id)
			d.stats.Crashed++
			continue
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b runner.Status) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// runnerLine reports whether line's second word is "runner": a runner
// command, which runner.ParseLine reads (a probe's every call, so found
// without splitting the line).
func runnerLine(line string) bool {
	i := 0
	for w := range strings.FieldsSeq(line) {
		if i == 1 {
			return w == "runner"
		}
		i++
	}
	return false
}

// executor is the in-memory runner.Executor of one instance.
type executor struct {
	d  *Driver
	id cloud.InstanceID
}

var _ runner.Executor = (*executor)(nil)

// Close is a no-op.
func (e *executor) Close() error { return nil }

func exitErr(code int, format string, args ...any) ([]byte, []byte, error) {
	msg := fmt.Sprintf(format, args...) + "\n"
	return nil, []byte(msg), &runner.ExitError{Code: code, Stderr: msg}
}

// Execute runs a command line on the instance's in-memory runner.
func (e *executor) Execute(ctx context.Context, line string, stdin []byte) (stdout, stderr []byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, runner.NotSent(err)
	}
	d := e.d
	install := ""
	if _, ok := runner.InstallPath(line); ok {
		install = d.installs.of(stdin) // before the lock: it reads the whole binary
	}
	// The line is read before the lock too: every probe of every instance
	// takes it, and a thousand probes start in the same step.
	isRunner := runnerLine(line)
	var (
		runnerPath string
		cmd        runner.Command
		parseErr   error
	)
	if isRunner {
		runnerPath, cmd, parseErr = runner.ParseLine(line)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// A call cancelled while it waited for the lock is never sent, as an
	// SSH session cancelled before it opens.
	if err := ctx.Err(); err != nil {
		return nil, nil, runner.NotSent(err)
	}
	now := d.clock.Now()
	s := d.instances[e.id]
	defer d.kickWatchersLocked(s)
	switch {
	case s == nil:
		return nil, nil, runner.NotSent(fmt.Errorf("dial %s: no such host: %w", e.id, ErrUnreachable))
	case !s.live():
		return nil, nil, runner.NotSent(fmt.Errorf("dial %s: no route to host: %w", s.address, ErrUnreachable))
	case now.Before(s.readyAt):
		return nil, nil, runner.NotSent(fmt.Errorf("dial %s: connection refused: %w", s.address, ErrUnreachable))
	case s.broken:
		return nil, nil, runner.NotSent(fmt.Errorf("ssh %s: handshake failed: EOF: %w", s.address, ErrUnreachable))
	}

	if !isRunner {
		return d.shell(s, line, install)
	}
	if parseErr != nil {
		return exitErr(2, "%v", parseErr)
	}
	if s.runnerGone {
		return runnerNotFound(runnerPath)
	}
	loss := LoseNone
	if d.loseNextStart != LoseNone && (cmd.Verb == "start" || cmd.Verb == "batch" && bytes.Contains(stdin, []byte(`"verb":"start"`))) {
		loss, d.loseNextStart = d.loseNextStart, LoseNone
	}
	if loss == LoseRequest || roll(d.rngLost, d.faults.LostRequestRate) {
		d.stats.LostRequests++
		return nil, nil, connectionLost(s)
	}
	if cmd.Verb == "batch" {
		stdout, stderr, err = d.batch(s, now, runnerPath, stdin)
	} else if highest, refused := runner.CheckEpoch(cmd.Epoch, s.epoch); refused {
		stdout, stderr, err = exitErr(runner.CodeFenced, "%s", runner.FencedMessage(cmd.Verb, cmd.Epoch, s.epoch))
	} else {
		s.epoch = highest
		var dropped int64
		stdout, stderr, dropped, err = d.runnerVerb(s, now, runnerPath, cmd, stdin)
		if dropped > 0 {
			stderr = fmt.Appendf(stderr, "runner logs %s: the first %d bytes of the output were dropped (over --max-bytes %d)\n", cmd.ID, dropped, cmd.MaxBytes)
		}
	}
	if loss == LoseReply || roll(d.rngLost, d.faults.LostReplyRate) {
		d.stats.LostReplies++ // it ran; its reply is lost
		return nil, nil, connectionLost(s)
	}
	return stdout, stderr, err
}

// connectionLost is the error of a call whose connection dropped: the
// caller cannot tell whether the command ran.
func connectionLost(s *instState) error {
	return fmt.Errorf("ssh %s: session ended without an exit status (connection lost): %w", s.address, ErrUnreachable)
}

// batch runs "runner batch" as the real runner does: one reply per
// request line, in order; a line that is not a request, or a request the
// runner would refuse as a command line, gets code 2 on its own.
func (d *Driver) batch(s *instState, now time.Time, runnerPath string, stdin []byte) (stdout, stderr []byte, err error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	logsOut := 0 // output the logs replies so far carry
	// The batch runs under its requests' epoch (one caller's: the
	// highest), as the runner's does.
	var epoch int64
	for line := range bytes.Lines(stdin) {
		var req runner.Request
		if json.Unmarshal(line, &req) == nil {
			epoch = max(epoch, req.Epoch)
		}
	}
	highest, refused := runner.CheckEpoch(epoch, s.epoch)
	if !refused {
		s.epoch = highest
	}
	for line := range bytes.Lines(stdin) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var reply runner.Reply
		var req runner.Request
		if err := json.Unmarshal(line, &req); err != nil {
			reply = runner.Reply{Code: 2, Stderr: "runner batch: bad request: " + err.Error()}
		} else if refused {
			reply = runner.Reply{Code: runner.CodeFenced, Stderr: runner.FencedMessage("batch", epoch, s.epoch)}
		} else if req.Epoch != 0 && req.Epoch < epoch {
			reply = runner.Reply{Code: runner.CodeFenced, Stderr: runner.FencedMessage(req.Verb, req.Epoch, epoch)}
		} else if cmd, err := runner.ParseRequest(req); err != nil {
			reply = runner.Reply{Code: 2, Stderr: err.Error()}
		} else if cmd.Verb == "logs" && logsOut >= runner.MaxBatchOutput {
			reply = runner.Reply{Code: runner.CodeDeferred, Stderr: fmt.Sprintf("runner logs %s: deferred: this call's replies already carry %d bytes of output; ask again", cmd.ID, runner.MaxBatchOutput)}
		} else {
			o, e, dropped, err := d.runnerVerb(s, now, runnerPath, cmd, req.Spec)
			reply.Stdout, reply.Stderr, reply.Dropped = o, strings.TrimSpace(string(e)), dropped
			if cmd.Verb == "logs" {
				logsOut += len(o)
			}
			var ee *runner.ExitError
			if errors.As(err, &ee) {
				reply.Code = ee.Code
			} else if err != nil {
				reply.Code, reply.Stderr = 1, err.Error()
			}
		}
		if err := enc.Encode(&reply); err != nil {
			return exitErr(1, "runner batch: %v", err)
		}
	}
	return out.Bytes(), nil, nil
}

// runnerVerb runs one runner verb on s's in-memory runner.
// For logs, dropped is what --max-bytes cut from the output's start (as
// the agent reports it).
func (d *Driver) runnerVerb(s *instState, now time.Time, runnerPath string, cmd runner.Command, stdin []byte) (stdout, stderr []byte, dropped int64, err error) {
	stdout, stderr, err = d.verb(s, now, runnerPath, cmd, stdin)
	if cmd.Verb == "logs" && err == nil {
		// The limit first, then the last lines of what it keeps.
		o := runner.Output{Data: stdout}.Cut(cmd.MaxBytes)
		tail := runner.TailLines(o.Data, cmd.Tail)
		if len(tail) < len(o.Data) {
			o.Dropped = 0 // the lines asked for do not reach the cut
		}
		stdout, dropped = tail, o.Dropped
	}
	return stdout, stderr, dropped, err
}

// verb runs one runner verb; logs returns the whole output.
func (d *Driver) verb(s *instState, now time.Time, runnerPath string, cmd runner.Command, stdin []byte) (stdout, stderr []byte, err error) {
	switch cmd.Verb {
	case "version":
		hash := d.runnerHash
		if h, ok := s.installed[runnerPath]; ok {
			hash = h
		}
		return []byte("fake-runner " + hash + "\n"), nil, nil
	case "list":
		sts := d.list(s, now)
		if cmd.ID != "" { // one container: what an exit notice asks for
			i := slices.IndexFunc(sts, func(st runner.Status) bool { return st.ID == cmd.ID })
			if i < 0 {
				return exitErr(1, "runner list: no such container %s", cmd.ID)
			}
			sts = sts[i : i+1]
		}
		out, err := runner.AppendList(nil, sts)
		if err != nil {
			return exitErr(1, "list: %v", err)
		}
		return out, nil, nil
	case "start":
		return d.start(s, now, cmd.ID, stdin)
	case "clean": // the in-memory runner keeps no directories for reuse
		return nil, nil, nil
	case "kill", "logs", "forget":
	default:
		return exitErr(2, "runner: verb %q is not run here", cmd.Verb)
	}

	// kill, logs, forget: need an existing container.
	d.list(s, now) // prune crashed containers
	c := s.containers[cmd.ID]
	if c == nil {
		return exitErr(1, "runner %s: no such container %q", cmd.Verb, cmd.ID)
	}
	st, _ := c.status(now)
	switch cmd.Verb {
	case "kill":
		if st.State == runner.StateRunning {
			c.signal(now, cmd.Signal)
		}
		d.stats.Kills++
		return nil, nil, nil
	case "logs":
		lines := []string{fmt.Sprintf("fake: %s running %s", c.spec.ID, strings.Join(c.spec.Command, " "))}
		if path.Base(c.spec.Command[0]) == "echo" {
			lines = append(lines, strings.Join(c.spec.Command[1:], " "))
		}
		lines = append(lines, filler(c.spec.Command)...)
		if st.State == runner.StateExited {
			lines = append(lines, fmt.Sprintf("fake: %s exited %d", c.spec.ID, st.ExitCode))
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil, nil
	case "forget":
		if st.State == runner.StateRunning {
			return exitErr(1, "runner forget: container %q is still running", cmd.ID)
		}
		delete(s.containers, cmd.ID)
	}
	return nil, nil, nil
}

// shell handles a non-runner command line: the runner install line
// (records the installed binary's hash, read from stdin before the lock),
// "false" (exit 1), and anything else (e.g. the boot probe "true"), which
// succeeds silently.
func (d *Driver) shell(s *instState, line, installHash string) ([]byte, []byte, error) {
	if p, ok := runner.InstallPath(line); ok {
		if s.installFails != "" {
			return exitErr(1, "%s", s.installFails)
		}
		s.runnerGone = false
		s.installed[p] = installHash
		d.stats.Installs++
		return nil, nil, nil
	}
	if strings.TrimSpace(line) == "false" {
		return nil, nil, &runner.ExitError{Code: 1}
	}
	return nil, nil, nil
}

func (d *Driver) start(s *instState, now time.Time, id string, stdin []byte) ([]byte, []byte, error) {
	var spec runner.Spec
	dec := json.NewDecoder(bytes.NewReader(stdin))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return exitErr(2, "runner start: reading spec: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return exitErr(2, "runner start: reading spec: data after the spec object")
	}
	if err := runner.ValidateSpec(&spec); err != nil {
		return exitErr(2, "runner start: %v", err)
	}
	if spec.ID != id {
		return exitErr(2, "runner start: spec id %q does not match %q", spec.ID, id)
	}
	d.list(s, now) // prune crashed containers
	if s.containers[id] != nil {
		return exitErr(1, "runner start: container %q already exists", id)
	}
	if spec.Command[0] == Unrunnable {
		return exitErr(1, "runner start %s: cannot run %q: exec %s: no such file or directory", id, Unrunnable, Unrunnable)
	}
	dur, code := behaviour(spec.Command)
	c := &ctr{
		spec:     spec,
		started:  now,
		dur:      dur,
		exitCode: code,
		health:   newHealthSim(spec.HealthCheck),
	}
	for _, a := range spec.Command {
		if a == IgnoreTerm {
			c.ignoreTerm = true
		}
	}
	if roll(d.rngCrash, d.faults.RunnerCrashRate) {
		c.crash = true
		if dur == forever {
			c.crashAt = now.Add(time.Second)
		} else {
			c.crashAt = now.Add(dur / 2)
		}
	}
	d.pid++
	c.pid = 1000 + d.pid
	s.containers[id] = c
	d.starts[id] = append(d.starts[id], string(s.id)+" "+now.Format(time.TimeOnly))
	d.stats.Starts++
	return nil, nil, nil
}
