//go:build unix

package runner

// The worker side of the runner protocol (DESIGN §7.3): what
// "dispatch-tui runner <verb>" does on an instance.
//
// Every container lives in a directory <StateDir>/<id>/ holding
//
//	stdout       the container's standard output; created (O_EXCL) by the
//	             supervisor, which is how it claims the directory
//	stderr       the container's standard error
//	pid_start    "<starttime> <started_at> <supervisor pid> <supervisor
//	             starttime> <pid>\n": the command's start time in clock
//	             ticks (/proc/<pid>/stat, "-" when unknown), the RFC 3339
//	             time it was started, the same for its supervisor, and its
//	             pid; once the command ended, "<code> <finished_at>\n"
//	             follows (the exit code, 128+signal when killed, and the
//	             RFC 3339 time it ended), so list reads one file
//	exit         only for a command that could not be started: pid_start's
//	             line with pid 0, then the exit line
//	error        why the command could not be started (only then)
//	spec.json    the spec, only for containers with an image (kill needs it
//	             to kill the docker container); the supervisor gets the
//	             specs on its stdin
//
// "forget" keeps the directory, emptied, in <StateDir>/free~/ for a later
// "start" to reuse, files included (see recycle.go).
//
// Each file is written with a single write(2) (see writeSmall), and the
// exit record goes into pid_start's inode: inode allocation for ~10 files
// per container was most of the cost of a start on ext4. Directories
// written by earlier runners hold instead a pid file ("<pid>"), and either
// an exit file (pid_start with the exit line, renamed) or spec.json,
// supervisor ("<pid> <starttime>"), started_at, pid_start (the start time
// alone), finished_at and exit ("<code>"); list, kill and forget still
// read them (readPIDRecord, readExitRecord), so a restarted dispatcher
// re-adopts their containers.
//
// "start" re-executes the runner binary as the hidden verb "supervise" in a
// new session; the supervisor starts the command in yet another session (so
// the command leads its own process group and can be signalled as a group),
// writes pid_start, waits for it and appends the exit line. Neither the
// supervisor nor the command keeps the SSH session's stdin, stdout or
// stderr open, so "start" returns as soon as the command runs and the
// container outlives both the runner invocation and the SSH session.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of WorkerEnv.
const (
	// StateDirEnv names the environment variable that overrides
	// DefaultStateDir.
	StateDirEnv     = "DISPATCH_TUI_RUNNER_DIR"
	DefaultStateDir = "/tmp/dispatch-tui-runner.d"
	// DefaultKillGrace is how long the supervisor waits between TERM and
	// KILL when a container exceeds its max_run_time.
	DefaultKillGrace = 10 * time.Second
)

const (
	maxSpecBytes = 1 << 20
	// startTimeout bounds how long "start" waits for the supervisor to
	// report that the command runs.
	startTimeout = 5 * time.Second
	// startingGrace is how long a container directory without a pid record
	// counts as still starting; after that it is reported exited with -1.
	startingGrace = 2 * startTimeout
	// basePATH is the PATH of every command unless its spec sets one.
	basePATH = "/usr/local/bin:/usr/bin:/bin"
)

// Files in a container directory (see the comment at the top of this file).
const (
	fileSpec     = "spec.json"
	fileStdout   = "stdout"
	fileStderr   = "stderr"
	filePIDStart = "pid_start"
	fileExit     = "exit"
	fileError    = "error"
	// Written by earlier runners only (read for re-adoption).
	filePID        = "pid"
	fileSupervisor = "supervisor"
	fileStartedAt  = "started_at"
	fileFinishedAt = "finished_at"
)

// WorkerEnv is what Main needs from its surroundings.
type WorkerEnv struct {
	// StateDir is where container directories live. "" means
	// $DISPATCH_TUI_RUNNER_DIR, or DefaultStateDir when that is unset.
	StateDir string
	// Version is printed by "runner version", e.g. "0.1.0-dev".
	Version string
	// Hash is the sha256 (hex) of the running executable, printed by
	// "runner version". "" means ExecutableHash() computed on demand, so
	// that only "version" pays for hashing the binary.
	Hash string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// KillGrace is not used by "kill" (the dispatcher escalates TERM to
	// KILL itself); the supervisor uses it between TERM and KILL when a
	// container exceeds its max_run_time. 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Self is the executable "start" re-executes as the supervisor; ""
	// means os.Executable().
	Self string
	// SelfArgs are the words between Self and "supervise" on the
	// supervisor's command line; nil means {"runner"}.
	SelfArgs []string
}

func (e *WorkerEnv) fill() {
	if e.StateDir == "" {
		e.StateDir = os.Getenv(StateDirEnv)
	}
	if e.StateDir == "" {
		e.StateDir = DefaultStateDir
	}
	if abs, err := filepath.Abs(e.StateDir); err == nil {
		e.StateDir = abs
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.KillGrace <= 0 {
		e.KillGrace = DefaultKillGrace
	}
	if e.SelfArgs == nil {
		e.SelfArgs = []string{"runner"}
	}
}

const workerUsage = "usage: runner version | start <id> (spec JSON on stdin) | list | kill <id> [--signal TERM|KILL] | logs <id> [--tail N] | forget <id> | batch (JSON requests on stdin) | serve (frames of batch requests on stdin) | clean"

// Main runs one runner verb with args (the words after "runner"), reading
// stdin and writing stdout/stderr; it returns the process exit code: 0 on
// success, 1 on an error, 2 on a usage error (bad arguments or a bad spec).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, env WorkerEnv) int {
	env.fill()
	w := &worker{env: env, stdout: stdout, stderr: stderr}
	if len(args) > 0 && args[0] == "supervise" {
		return w.supervise(args[1:])
	}
	// "runner batch" (DESIGN §9) reads one JSON request per line on stdin
	// (the same verbs and arguments, with the spec inline for start) and
	// writes one JSON reply per line on stdout, so that the dispatcher pays
	// for one SSH session and one process start per batch instead of one
	// per command. Consecutive starts share one detached supervisor, so
	// the containers outlive the batch and its session.
	cmd, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "%v; %s\n", err, workerUsage)
		return 2
	}
	if cmd.ID != "" && !safeID(cmd.ID) {
		fmt.Fprintf(stderr, "runner %s: invalid container id %q: want [A-Za-z0-9_.-]{1,128}, not . or ..\n", cmd.Verb, cmd.ID)
		return 2
	}
	switch cmd.Verb {
	case "version":
		return w.version()
	case "start":
		return w.start(cmd.ID, stdin)
	case "list":
		return w.list()
	case "kill":
		return w.kill(cmd.ID, cmd.Signal)
	case "logs":
		return w.logs(cmd.ID, cmd.Tail)
	case "forget":
		return w.forget(cmd.ID)
	case "batch":
		return w.batch(stdin)
	case "serve":
		return w.serve(stdin)
	case "clean":
		return w.clean()
	}
	fmt.Fprintf(stderr, "runner: unknown verb %q; %s\n", cmd.Verb, workerUsage)
	return 2
}

// safeID is ValidID minus "." and "..", which ValidID accepts but which
// would name the state directory itself or its parent.
func safeID(id string) bool {
	return ValidID(id) && id != "." && id != ".."
}

type worker struct {
	env            WorkerEnv
	stdout, stderr io.Writer
}

// fail prints one line on stderr and returns code.
func (w *worker) fail(code int, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", " ")
	fmt.Fprintln(w.stderr, msg)
	return code
}

func (w *worker) version() int {
	hash := w.env.Hash
	if hash == "" {
		var err error
		if hash, err = ExecutableHash(); err != nil {
			return w.fail(1, "runner version: %v", err)
		}
	}
	v := w.env.Version
	if v == "" {
		v = "unknown"
	}
	fmt.Fprintf(w.stdout, "%s %s\n", v, hash)
	return 0
}

// stateRoot returns the state directory, creating it (0700) when create is
// set. exists is false when it does not exist. It refuses a directory that
// is a symlink, belongs to another user or is writable by others: pid files
// there decide which processes "kill" signals.
func (w *worker) stateRoot(create bool) (root string, exists bool, err error) {
	root = w.env.StateDir
	if create {
		if err := os.MkdirAll(root, 0o700); err != nil {
			return root, false, fmt.Errorf("creating state dir: %w (set %s to a writable directory)", err, StateDirEnv)
		}
	}
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return root, false, nil
	}
	if err != nil {
		return root, false, err
	}
	fix := fmt.Sprintf("remove it or set %s to a directory of your own", StateDirEnv)
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return root, false, fmt.Errorf("state dir %s is not a directory (%s)", root, fix)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return root, false, fmt.Errorf("state dir %s belongs to uid %d, not %d (%s)", root, st.Uid, os.Geteuid(), fix)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return root, false, fmt.Errorf("state dir %s is writable by group or others (%s)", root, fix)
	}
	return root, true, nil
}

// containerDir returns the directory of an existing container, or "" and
// an exit code after printing why not.
func (w *worker) containerDir(verb, id string) (string, int) {
	root, exists, err := w.stateRoot(false)
	if err != nil {
		return "", w.fail(1, "runner %s: %v", verb, err)
	}
	if !exists {
		return "", w.fail(1, "runner %s: no such container %s", verb, id)
	}
	dir := filepath.Join(root, id)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return "", w.fail(1, "runner %s: no such container %s", verb, id)
	}
	return dir, 0
}

// ---- start ----

// readSpec reads and checks the spec of container id from r.
func readSpec(r io.Reader, id string) (Spec, error) {
	if r == nil {
		r = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return Spec{}, fmt.Errorf("reading spec from stdin: %w", err)
	}
	if len(data) > maxSpecBytes {
		return Spec{}, errors.New("spec on stdin is larger than 1 MiB")
	}
	spec, err := decodeSpec(data)
	if err != nil {
		return Spec{}, err
	}
	if spec.ID != id {
		return Spec{}, fmt.Errorf("spec id %q does not match the command-line id %q", spec.ID, id)
	}
	return spec, nil
}

// decodeSpec parses one JSON spec, rejecting unknown fields and trailing
// data, and checks it.
func decodeSpec(data []byte) (Spec, error) {
	var spec Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return Spec{}, fmt.Errorf("bad spec JSON on stdin: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Spec{}, errors.New("bad spec JSON on stdin: data after the spec object")
	}
	if err := ValidateSpec(&spec); err != nil {
		return Spec{}, err
	}
	if err := checkSpec(&spec); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// checkSpec adds the worker's checks to ValidateSpec: what exec(2) and
// docker could not take literally.
func checkSpec(s *Spec) error {
	if !safeID(s.ID) {
		return fmt.Errorf("invalid container id %q", s.ID)
	}
	for i, a := range s.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("spec: command[%d] contains a NUL byte", i)
		}
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("spec: invalid env name %q (no '=' or NUL, not empty)", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("spec: env %s contains a NUL byte", k)
		}
	}
	if s.Image != "" && !validImage(s.Image) {
		return fmt.Errorf("spec: invalid image %q: want a docker reference such as debian:12 or registry/name@sha256:<digest>", s.Image)
	}
	if s.MaxRunTime < 0 {
		return fmt.Errorf("spec: negative max_run_time %v", s.MaxRunTime)
	}
	return nil
}

// validImage accepts docker image references: [A-Za-z0-9._/:@-], starting
// with a letter or digit (so it can never be taken for a docker option).
func validImage(s string) bool {
	if len(s) == 0 || len(s) > 512 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '/' || c == ':' || c == '@' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func (w *worker) start(id string, stdin io.Reader) int {
	spec, err := readSpec(stdin, id)
	if err != nil {
		return w.fail(2, "runner start %s: %v", id, err)
	}
	if spec.Image != "" {
		if _, err := exec.LookPath("docker"); err != nil {
			return w.fail(1, "runner start %s: image given but docker is not installed (install docker on the instance, or submit without an image)", id)
		}
	}
	root, _, err := w.stateRoot(true)
	if err != nil {
		return w.fail(1, "runner start %s: %v", id, err)
	}
	dir := filepath.Join(root, id)
	pool := newFreePool(root)
	err = pool.makeDir(dir, w.env.Now())
	pool.close()
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return w.fail(1, "container %s already exists (forget it first, or use a new id)", id)
		}
		return w.fail(1, "runner start %s: %v", id, err)
	}
	started := false
	defer func() {
		if !started {
			os.RemoveAll(dir)
		}
	}()
	body, err := writeSpec(dir, &spec)
	if err != nil {
		return w.fail(1, "runner start %s: writing spec: %v", id, err)
	}
	if err := w.launchMany(root, []string{id}, [][]byte{body})[0]; err != nil {
		return w.fail(1, "runner start %s: %v", id, err)
	}
	started = true
	return 0
}

// writeSpec returns spec as JSON, also written to dir/spec.json when the
// spec has an image: "kill" then needs it (after a restart of the
// dispatcher too) to kill the docker container. Other specs reach the
// supervisor on its stdin only: one file less per container.
func writeSpec(dir string, spec *Spec) ([]byte, error) {
	body, err := json.Marshal(spec)
	if err == nil && spec.Image != "" {
		err = writeSmall(filepath.Join(dir, fileSpec), body)
	}
	return body, err
}

// launchMany starts one supervisor for the containers ids (their
// directories exist under root; specs holds their specs as JSON, sent to
// the supervisor on its stdin) and waits until it reports, for each, that
// the command runs (pid written) or that it could not start it. It returns
// one error (or nil) per id.
func (w *worker) launchMany(root string, ids []string, specs [][]byte) []error {
	errs := make([]error, len(ids))
	fill := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	self := w.env.Self
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
	args := append([]string{self}, w.env.SelfArgs...)
	args = append(args, "supervise", "--dir", root, "--ready-fd", "3", "--grace", w.env.KillGrace.String(), "--specs-stdin")
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

// ---- list ----

func (w *worker) list() int {
	root, exists, err := w.stateRoot(false)
	if err != nil {
		return w.fail(1, "runner list: %v", err)
	}
	if !exists {
		return 0
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return w.fail(1, "runner list: %v", err)
	}
	sts := make([]Status, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() || !safeID(e.Name()) {
			continue
		}
		sts = append(sts, w.status(filepath.Join(root, e.Name()), e.Name()))
	}
	sort.Slice(sts, func(i, j int) bool { return sts[i].ID < sts[j].ID })
	if err := FormatList(w.stdout, sts); err != nil {
		return w.fail(1, "runner list: %v", err)
	}
	return 0
}

// status reads the state of the container in dir.
//
// A container is exited once pid_start holds its exit line (or, for a
// command that could not be started and for earlier runners' directories,
// once an exit file exists). Without one it is running while its command
// is alive, and also while its supervisor is alive (the command just ended
// and the supervisor is about to record the exit). When both are gone
// without an exit record (the supervisor was killed) it is exited with
// code -1. A directory without a pid record is starting for startingGrace
// after it was made, then exited with -1.
//
// pid_start holds everything list reports, so a container costs one open
// and one read, plus a look at /proc while it runs.
func (w *worker) status(dir, id string) Status {
	st := Status{ID: id, State: StateRunning}
	pr, pidErr := readPIDRecord(dir)
	if pidErr == nil && pr.exit != nil {
		pr.exit.fill(&st)
		return st
	}
	switch {
	case pidErr == nil:
		st.PID = pr.pid
		st.StartedAt = pr.started
		if st.StartedAt.IsZero() {
			st.StartedAt = modTime(filepath.Join(dir, filePID))
		}
	case errors.Is(pidErr, errNotWritten):
		st.StartedAt = modTime(dir) // made (or claimed) by start
	default:
		st.StartedAt = bornTime(dir)
	}
	// A start that failed has an exit file, and so has an exited
	// container of an earlier runner (which renamed pid_start to exit,
	// leaving its pid file, whose pid may have been reused since).
	if pidErr != nil || pr.legacy {
		if ex, ok := readExitRecord(dir); ok {
			ex.fill(&st)
			return st
		}
	}
	if pidErr != nil {
		// "start" makes the directory, then the supervisor writes the
		// pid record: a directory without one is starting for a while.
		if since := w.env.Now().Sub(st.StartedAt); since >= 0 && since < startingGrace {
			return st // starting
		}
		st.State, st.ExitCode = StateExited, -1
		return st
	}
	if alive(pr.pid, pr.start) {
		return st
	}
	if spid, sstart := pr.supervisor(dir); alive(spid, sstart) {
		return st // the supervisor is recording the exit
	}
	if w.readExit(dir, &st) { // written between the checks above
		return st
	}
	st.State, st.ExitCode = StateExited, -1
	return st
}

// bornTime is when the container in dir was made: its spec file's time
// (written by earlier runners for every container), else the directory's.
func bornTime(dir string) time.Time {
	if t := modTime(filepath.Join(dir, fileSpec)); !t.IsZero() {
		return t
	}
	return modTime(dir)
}

// readExit fills the exit code and finished time from the exit file and
// reports whether there is one.
func (w *worker) readExit(dir string, st *Status) bool {
	if ex, ok := readExitRecord(dir); ok {
		ex.fill(st)
		return true
	}
	if pr, err := readPIDRecord(dir); err == nil && pr.exit != nil {
		pr.exit.fill(st)
		return true
	}
	return false
}

// ---- kill ----

func (w *worker) kill(id, signal string) int {
	dir, code := w.containerDir("kill", id)
	if dir == "" {
		return code
	}
	sig := syscall.SIGTERM
	if signal == SignalKill {
		sig = syscall.SIGKILL
	}
	st := w.status(dir, id)
	if st.State != StateRunning {
		return 0
	}
	if st.PID == 0 {
		return w.fail(1, "runner kill %s: container is still starting; retry the kill", id)
	}
	if pr, err := readPIDRecord(dir); err == nil && pr.pid == st.PID && alive(pr.pid, pr.start) && st.PID > 1 {
		// The command leads its own session and process group: signal
		// the whole group, so its children go too.
		if err := syscall.Kill(-st.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return w.fail(1, "runner kill %s: %v", id, err)
		}
	}
	if sig == syscall.SIGKILL {
		// A killed "docker run" client leaves its container behind.
		if spec, err := readSpecFile(dir); err == nil && spec.Image != "" {
			if docker, err := exec.LookPath("docker"); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
				exec.CommandContext(ctx, docker, "kill", "--signal=KILL", id).Run()
				cancel()
			}
		}
	}
	return 0
}

// ---- logs ----

func (w *worker) logs(id string, tail int) int {
	dir, code := w.containerDir("logs", id)
	if dir == "" {
		return code
	}
	var files []*os.File
	var sizes []int64
	for _, name := range []string{fileStdout, fileStderr} {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return w.fail(1, "runner logs %s: %v", id, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return w.fail(1, "runner logs %s: %v", id, err)
		}
		files = append(files, f)
		sizes = append(sizes, fi.Size())
	}
	if tail <= 0 {
		for _, f := range files {
			if _, err := io.Copy(w.stdout, f); err != nil {
				return w.fail(1, "runner logs %s: %v", id, err)
			}
		}
		return 0
	}
	cat := &concatReaderAt{parts: files, sizes: sizes}
	total := cat.size()
	off, err := tailOffset(cat, total, tail, 32<<10)
	if err == nil {
		_, err = io.Copy(w.stdout, io.NewSectionReader(cat, off, total-off))
	}
	if err != nil {
		return w.fail(1, "runner logs %s: %v", id, err)
	}
	return 0
}

// concatReaderAt reads its parts (of the given sizes) as one.
type concatReaderAt struct {
	parts []*os.File
	sizes []int64
}

func (c *concatReaderAt) size() int64 {
	var n int64
	for _, s := range c.sizes {
		n += s
	}
	return n
}

func (c *concatReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for i, part := range c.parts {
		if len(p) == 0 {
			break
		}
		if off >= c.sizes[i] {
			off -= c.sizes[i]
			continue
		}
		want := min(int64(len(p)), c.sizes[i]-off)
		m, err := part.ReadAt(p[:want], off)
		n += m
		if err != nil && !(errors.Is(err, io.EOF) && int64(m) == want) {
			return n, err
		}
		p = p[m:]
		off = 0
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// tailOffset returns the offset in r (size bytes) where its last n lines
// begin. A newline ending the data does not start another line.
func tailOffset(r io.ReaderAt, size int64, n, chunk int) (int64, error) {
	if n <= 0 || size == 0 {
		return 0, nil
	}
	buf := make([]byte, chunk)
	seen := 0
	for pos := size; pos > 0; {
		k := int(min(int64(chunk), pos))
		pos -= int64(k)
		if _, err := r.ReadAt(buf[:k], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := k - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+int64(i) == size-1 {
				continue
			}
			seen++
			if seen == n {
				return pos + int64(i) + 1, nil
			}
		}
	}
	return 0, nil
}

// ---- forget ----

func (w *worker) forget(id string) int {
	dir, code := w.containerDir("forget", id)
	if dir == "" {
		return code
	}
	st := w.status(dir, id)
	if st.State == StateRunning {
		return w.fail(1, "runner forget %s: container is running; kill it first", id)
	}
	// Rename first, to a name list skips ('~' is not valid in an id), so the
	// container disappears at once even if removing its files fails.
	gone := filepath.Join(filepath.Dir(dir), fmt.Sprintf("forget~%s~%d", id, os.Getpid()))
	if err := os.Rename(dir, gone); err != nil {
		return w.fail(1, "runner forget %s: %v", id, err)
	}
	if recycle(filepath.Dir(dir), gone) == nil {
		return 0
	}
	if err := os.RemoveAll(gone); err != nil {
		return w.fail(1, "runner forget %s: removing %s: %v", id, gone, err)
	}
	return 0
}

// ---- files and processes ----

// writeSmall creates path, which must not exist, and writes data to it
// with a single write(2): three system calls and one inode, where a
// temporary file and a rename cost an inode, a rename and more calls. A
// reader may find the file empty (between the create and the write) but,
// for a few bytes written at once to a new file, not partly written: the
// kernel copies them into the page cache before it grows the file's size,
// so a read sees size 0 or all of them. Readers still check that the
// content ends with the newline every writer puts last, and take an empty
// or unterminated file for one not written yet.
func writeSmall(path string, data []byte) error {
	fd, err := openFresh(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return writeClose(fd, path, data, nil)
}

// writeClose writes data to fd, open on path, with a single write(2)
// unless err (from preparing fd) is set, and closes fd. It returns the
// first error, as a *fs.PathError.
func writeClose(fd int, path string, data []byte, err error) error {
	if err == nil {
		var n int
		n, err = syscall.Write(fd, data)
		if err == nil && n < len(data) {
			err = io.ErrShortWrite
		}
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// writeRecord writes data as the whole content of path with a single
// write(2), creating path if need be: in a recycled directory the file is
// there, empty, and opening it costs no inode (see recycle.go). A file
// that is not empty is truncated first, through the descriptor.
func writeRecord(path string, data []byte) error {
	fd, err := openRetry(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err = syscall.Fstat(fd, &st); err == nil && st.Size != 0 {
		err = syscall.Ftruncate(fd, 0)
	}
	return writeClose(fd, path, data, err)
}

// appendSmall appends data to the existing file path with a single
// write(2) (see writeSmall for why readers see all of it or none).
func appendSmall(path string, data []byte) error {
	fd, err := openRetry(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return writeClose(fd, path, data, nil)
}

func openRetry(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// readSmall returns the content of path, a state file of a few bytes (at
// most 4 KiB are read), with an open, a read or two and a close.
func readSmall(path string) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || n < len(buf) {
			break // a short read of a regular file is its end
		}
	}
	return append([]byte(nil), buf[:n]...), nil
}

func readString(path string) string {
	b, err := readSmall(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readTime(path string) time.Time {
	return parseTime(readString(path))
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// pidRecord is what the pid and pid_start files (and, for directories of
// earlier runners, started_at and supervisor) say.
type pidRecord struct {
	pid     int
	start   string // the command's start time in clock ticks; "" = unknown
	started time.Time
	spid    int // the supervisor; 0 = see the supervisor file (earlier runners)
	sstart  string
	exit    *exitRecord // pid_start's exit line, once appended
	legacy  bool        // the pid came from an earlier runner's pid file
}

// formatPIDRecord renders pid_start (the first line of exit).
func formatPIDRecord(r pidRecord) []byte {
	return fmt.Appendf(nil, "%s %s %d %s %d\n", orDash(r.start), r.started.UTC().Format(time.RFC3339Nano), r.spid, orDash(r.sstart), r.pid)
}

// formatExitLine renders the second line of the exit file.
func formatExitLine(code int, finished time.Time) []byte {
	return fmt.Appendf(nil, "%d %s\n", code, finished.UTC().Format(time.RFC3339Nano))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func unDash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// readLines returns the lines of path's content when it is complete (ends
// with a newline); an error wrapping errNotWritten when it is there but
// empty or unterminated.
func readLines(path string) ([]string, error) {
	b, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%s: %w", path, errNotWritten)
	}
	return strings.Split(string(b[:len(b)-1]), "\n"), nil
}

// parsePIDLine parses the five fields of formatPIDRecord.
func parsePIDLine(line string) (r pidRecord, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return r, false
	}
	var err error
	if r.pid, err = strconv.Atoi(f[4]); err != nil || r.pid < 0 {
		return r, false
	}
	r.start = unDash(f[0])
	r.started = parseTime(f[1])
	r.spid, _ = strconv.Atoi(f[2])
	r.sstart = unDash(f[3])
	return r, true
}

// parseExitLine parses formatExitLine.
func parseExitLine(line string) (r exitRecord, ok bool) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return r, false
	}
	var err error
	if r.code, err = strconv.Atoi(f[0]); err != nil {
		return r, false
	}
	r.finished = parseTime(f[1])
	return r, !r.finished.IsZero()
}

// errNotWritten: a state file is there but not complete. For pid_start,
// the supervisor has yet to write it (in a recycled directory it is there,
// empty, from the start).
var errNotWritten = errors.New("not written yet")

// readPIDRecord reads pid_start of the container in dir: five fields,
// with the exit line after them once the command ended. Without pid_start
// (earlier runners renamed it to exit when the command ended), or with
// pid_start as the oldest runners wrote it (the start time alone, with
// started_at in its own file), the pid comes from the pid file ("<pid>"),
// which those runners wrote after pid_start.
func readPIDRecord(dir string) (pidRecord, error) {
	var r pidRecord
	lines, err := readLines(filepath.Join(dir, filePIDStart))
	if errors.Is(err, errNotWritten) {
		return r, err
	}
	if err == nil {
		if m, ok := parsePIDLine(lines[0]); ok && m.pid > 0 {
			if len(lines) > 1 {
				if ex, ok := parseExitLine(lines[1]); ok {
					ex.pid, ex.started, ex.full = m.pid, m.started, true
					m.exit = &ex
				}
			}
			return m, nil
		}
		r.start = strings.TrimSpace(lines[0])
	}
	pid, _, err := readPIDFile(filepath.Join(dir, filePID))
	if err != nil {
		return pidRecord{}, err
	}
	r.pid, r.legacy = pid, true
	r.started = readTime(filepath.Join(dir, fileStartedAt))
	return r, nil
}

// supervisor returns the supervisor of the container in dir: from the pid
// file, or from the supervisor file of earlier runners.
func (r pidRecord) supervisor(dir string) (pid int, start string) {
	if r.spid > 0 {
		return r.spid, r.sstart
	}
	pid, start, err := readPIDFile(filepath.Join(dir, fileSupervisor))
	if err != nil {
		return 0, ""
	}
	return pid, start
}

// exitRecord is what the exit file (and, for directories of earlier
// runners, finished_at) says.
type exitRecord struct {
	code     int
	finished time.Time
	pid      int
	started  time.Time
	full     bool // pid and started are set: nothing else to read
}

// readExitRecord reads the exit file of the container in dir: the pid
// file's line and the exit line "<code> <finished_at>"; or (earlier
// runners) "<code>" alone, with the time in finished_at. ok is false when
// there is none (yet).
func readExitRecord(dir string) (r exitRecord, ok bool) {
	path := filepath.Join(dir, fileExit)
	lines, err := readLines(path)
	if err != nil {
		return r, false
	}
	if len(lines) >= 2 {
		p, ok1 := parsePIDLine(lines[0])
		ex, ok2 := parseExitLine(lines[1])
		if !ok1 || !ok2 {
			return r, false
		}
		ex.pid, ex.started, ex.full = p.pid, p.started, true
		return ex, true
	}
	f := strings.Fields(lines[0])
	if len(f) != 1 {
		return r, false
	}
	if r.code, err = strconv.Atoi(f[0]); err != nil {
		return r, false
	}
	r.finished = readTime(filepath.Join(dir, fileFinishedAt))
	if r.finished.IsZero() {
		r.finished = modTime(path)
	}
	return r, true
}

// fill sets st's exit fields, and its pid and start time when the record
// has them.
func (r exitRecord) fill(st *Status) {
	st.State, st.ExitCode, st.FinishedAt = StateExited, r.code, r.finished
	if r.full {
		st.PID, st.StartedAt = r.pid, r.started
	}
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime().UTC()
}

// readPIDFile reads "<pid>[ <starttime>]".
func readPIDFile(path string) (pid int, start string, err error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, "", err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return 0, "", fmt.Errorf("%s: not written yet", path)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, "", fmt.Errorf("%s: empty", path)
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, "", fmt.Errorf("%s: bad pid %q", path, f[0])
	}
	if len(f) > 1 {
		start = f[1]
	}
	return pid, start, nil
}

func readSpecFile(dir string) (Spec, error) {
	b, err := os.ReadFile(filepath.Join(dir, fileSpec))
	if err != nil {
		return Spec{}, err
	}
	return decodeSpec(b)
}

// procStat returns the state letter (field 3) and start time in clock
// ticks (field 22, as text) of pid from /proc/<pid>/stat. It runs for
// every container started and every running one listed, so it reads with
// bare system calls (os.ReadFile would also try the poller and fstat).
func procStat(pid int) (state byte, start string, err error) {
	b, err := readSmall("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	state, start, ok := parseProcStat(b)
	if !ok {
		return 0, "", fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return state, start, nil
}

// parseProcStat returns fields 3 and 22 of a /proc/<pid>/stat line.
func parseProcStat(b []byte) (state byte, start string, ok bool) {
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	rest := b[i+1:]
	for field := 3; ; field++ {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		if end == 0 {
			return 0, "", false
		}
		switch field {
		case 3:
			state = rest[0]
		case 22:
			return state, string(rest[:end]), true
		}
		rest = rest[end:]
	}
}

// procStart returns pid's start time for later alive checks, "" when /proc
// does not say.
func procStart(pid int) string {
	_, start, err := procStat(pid)
	if err != nil {
		return ""
	}
	return start
}

// alive reports whether pid runs and, when start is known, is the process
// that started then (not a later one that reuses the pid). Zombies count as
// dead. Without /proc it falls back to kill(pid, 0).
func alive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	state, st, err := procStat(pid)
	if err == nil {
		if state == 'Z' || state == 'X' || state == 'x' {
			return false
		}
		return start == "" || st == start
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/stat"); serr == nil {
			return false // /proc works and has no such process
		}
	}
	kerr := syscall.Kill(pid, 0)
	return kerr == nil || errors.Is(kerr, syscall.EPERM)
}

// ---- batch ----

// batch runs "runner batch": one Request per line on stdin, one Reply per
// line on stdout, in order. Consecutive starts are launched together under
// one supervisor. A request that fails gets a non-zero code in its reply;
// the batch itself fails only when stdin cannot be read.
func (w *worker) batch(stdin io.Reader) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	sc := newRequestScanner(stdin)
	var f frame
	for sc.Scan() {
		f.add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return w.fail(2, "runner batch: reading requests: %v", err)
	}
	bw := bufio.NewWriter(w.stdout)
	if err := writeReplies(bw, w.runRequests(&f)); err != nil {
		return w.fail(1, "runner batch: %v", err)
	}
	if err := bw.Flush(); err != nil {
		return w.fail(1, "runner batch: %v", err)
	}
	return 0
}

func newRequestScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 2*maxSpecBytes+4096)
	return sc
}

// frame is the requests of a batch, or of one frame of serve, as read.
type frame struct {
	reqs      []Request
	parseErrs []error
}

// add parses one input line; it reports false for an empty line (which
// ends a frame of serve).
func (f *frame) add(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return false
	}
	var r Request
	err := json.Unmarshal(line, &r)
	f.reqs = append(f.reqs, r)
	f.parseErrs = append(f.parseErrs, err)
	return true
}

// runRequests runs a batch's requests in order, consecutive starts under
// one supervisor, and returns one reply per request.
func (w *worker) runRequests(f *frame) []Reply {
	reqs, parseErrs := f.reqs, f.parseErrs
	replies := make([]Reply, len(reqs))
	for i := 0; i < len(reqs); {
		if parseErrs[i] == nil && reqs[i].Verb == "start" {
			j := i
			for j < len(reqs) && parseErrs[j] == nil && reqs[j].Verb == "start" {
				j++
			}
			w.batchStart(reqs[i:j], replies[i:j])
			i = j
			continue
		}
		if parseErrs[i] != nil {
			replies[i] = Reply{Code: 2, Stderr: "runner batch: bad request: " + parseErrs[i].Error()}
		} else {
			replies[i] = w.batchOne(reqs[i])
		}
		i++
	}
	return replies
}

func writeReplies(bw *bufio.Writer, replies []Reply) error {
	enc := json.NewEncoder(bw)
	for i := range replies {
		if err := enc.Encode(&replies[i]); err != nil {
			return err
		}
	}
	return nil
}

// serve runs "runner serve": batches over one long-lived session (DESIGN
// §9), so that the dispatcher pays for neither an SSH session nor a
// process start per call. stdin carries frames: request lines as for
// batch, then an empty line. For each frame serve writes its replies, one
// line each, then an empty line. A frame cut short by the end of stdin is
// not run (the dispatcher takes a frame it could not finish sending for
// one never sent). Containers started here outlive the session as they
// outlive a batch.
func (w *worker) serve(stdin io.Reader) int {
	if stdin == nil {
		return 0
	}
	sc := newRequestScanner(stdin)
	bw := bufio.NewWriter(w.stdout)
	var f frame
	for sc.Scan() {
		if f.add(sc.Bytes()) {
			continue
		}
		if err := writeReplies(bw, w.runRequests(&f)); err != nil {
			return w.fail(1, "runner serve: %v", err)
		}
		if err := bw.WriteByte('\n'); err != nil {
			return w.fail(1, "runner serve: %v", err)
		}
		if err := bw.Flush(); err != nil {
			return w.fail(1, "runner serve: %v", err)
		}
		f = frame{reqs: f.reqs[:0], parseErrs: f.parseErrs[:0]}
	}
	if err := sc.Err(); err != nil {
		return w.fail(2, "runner serve: reading requests: %v", err)
	}
	return 0
}

// batchOne runs one request other than start as its verb would.
func (w *worker) batchOne(r Request) Reply {
	var out, errb bytes.Buffer
	sub := &worker{env: w.env, stdout: &out, stderr: &errb}
	args := []string{r.Verb}
	if r.ID != "" {
		args = append(args, r.ID)
	}
	if r.Signal != "" {
		args = append(args, "--signal", r.Signal)
	}
	if r.Tail > 0 {
		args = append(args, "--tail", strconv.Itoa(r.Tail))
	}
	cmd, err := ParseArgs(args)
	code := 0
	switch {
	case err != nil:
		code = sub.fail(2, "%v", err)
	case cmd.ID != "" && !safeID(cmd.ID):
		code = sub.fail(2, "runner %s: invalid container id %q", cmd.Verb, cmd.ID)
	default:
		switch cmd.Verb {
		case "version":
			code = sub.version()
		case "list":
			code = sub.list()
		case "kill":
			code = sub.kill(cmd.ID, cmd.Signal)
		case "logs":
			code = sub.logs(cmd.ID, cmd.Tail)
		case "forget":
			code = sub.forget(cmd.ID)
		default:
			code = sub.fail(2, "runner batch: verb %q not allowed in a batch", cmd.Verb)
		}
	}
	return Reply{Code: code, Stdout: out.Bytes(), Stderr: strings.TrimSpace(errb.String())}
}

// batchStart starts the containers of reqs (all "start") under one
// supervisor and fills their replies.
func (w *worker) batchStart(reqs []Request, replies []Reply) {
	failf := func(i, code int, format string, args ...any) {
		replies[i] = Reply{Code: code, Stderr: strings.ReplaceAll(strings.TrimSpace(fmt.Sprintf(format, args...)), "\n", " ")}
	}
	root, _, err := w.stateRoot(true)
	if err != nil {
		for i := range reqs {
			failf(i, 1, "runner start %s: %v", reqs[i].ID, err)
		}
		return
	}
	var ids []string
	var idx []int
	var bodies [][]byte
	pool := newFreePool(root)
	defer pool.close()
	now := w.env.Now()
	for i, r := range reqs {
		if !safeID(r.ID) {
			failf(i, 2, "runner start: invalid container id %q: want [A-Za-z0-9_.-]{1,128}, not . or ..", r.ID)
			continue
		}
		if len(r.Spec) > maxSpecBytes {
			failf(i, 2, "runner start %s: spec is larger than 1 MiB", r.ID)
			continue
		}
		spec, err := decodeSpec(r.Spec)
		if err == nil && spec.ID != r.ID {
			err = fmt.Errorf("spec id %q does not match the request id %q", spec.ID, r.ID)
		}
		if err != nil {
			failf(i, 2, "runner start %s: %v", r.ID, err)
			continue
		}
		if spec.Image != "" {
			if _, err := exec.LookPath("docker"); err != nil {
				failf(i, 1, "runner start %s: image given but docker is not installed (install docker on the instance, or submit without an image)", r.ID)
				continue
			}
		}
		if slices.Contains(ids, r.ID) {
			failf(i, 1, "container %s already exists (forget it first, or use a new id)", r.ID)
			continue
		}
		dir := filepath.Join(root, r.ID)
		if err := pool.makeDir(dir, now); err != nil {
			if errors.Is(err, fs.ErrExist) {
				failf(i, 1, "container %s already exists (forget it first, or use a new id)", r.ID)
			} else {
				failf(i, 1, "runner start %s: %v", r.ID, err)
			}
			continue
		}
		body, err := writeSpec(dir, &spec)
		if err != nil {
			os.RemoveAll(dir)
			failf(i, 1, "runner start %s: writing spec: %v", r.ID, err)
			continue
		}
		ids = append(ids, r.ID)
		idx = append(idx, i)
		bodies = append(bodies, body)
	}
	if len(ids) == 0 {
		return
	}
	for k, err := range w.launchMany(root, ids, bodies) {
		if err != nil {
			os.RemoveAll(filepath.Join(root, ids[k]))
			failf(idx[k], 1, "runner start %s: %v", ids[k], err)
		}
	}
}

// KillAll sends SIGKILL to every container still running under stateDir
// (its whole process group) and to its supervisor: what destroying an
// instance does to the containers on it. Finished containers are skipped,
// and so is any process whose start time does not match its record (the
// pid was reused by something else).
func KillAll(stateDir string) {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !ValidID(e.Name()) {
			continue
		}
		dir := filepath.Join(stateDir, e.Name())
		if _, done := readExitRecord(dir); done {
			continue
		}
		r, err := readPIDRecord(dir)
		if err != nil || r.exit != nil {
			continue
		}
		spid, sstart := r.spid, r.sstart
		if spid == 0 { // earlier runners kept the supervisor in its own file
			spid, sstart, _ = readPIDFile(filepath.Join(dir, fileSupervisor))
		}
		if spid > 1 && sstart != "" && alive(spid, sstart) {
			syscall.Kill(-spid, syscall.SIGKILL)
			syscall.Kill(spid, syscall.SIGKILL)
		}
		if r.pid > 1 && r.start != "" && alive(r.pid, r.start) {
			syscall.Kill(-r.pid, syscall.SIGKILL)
		}
	}
}
