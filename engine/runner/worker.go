//go:build unix

package runner

// The worker side of the runner protocol (DESIGN §7.3): what
// "dispatch-tui runner <verb>" does on an instance.
//
// Every container lives in a directory <StateDir>/<id>/ holding
//
//	spec.json    the spec read by "start"
//	supervisor   "<pid> <starttime>" of the supervisor process
//	stdout       the container's standard output
//	stderr       the container's standard error
//	started_at   RFC 3339 time the command was started
//	pid_start    the command's start time in clock ticks (/proc/<pid>/stat)
//	pid          the command's pid; written last of the files above, atomically
//	finished_at  RFC 3339 time the command ended
//	exit         the exit code (128+signal when killed); written last, atomically
//
// "start" re-executes the runner binary as the hidden verb "supervise" in a
// new session; the supervisor starts the command in yet another session (so
// the command leads its own process group and can be signalled as a group),
// writes pid, waits for it and writes exit. Neither the supervisor nor the
// command keeps the SSH session's stdin, stdout or stderr open, so "start"
// returns as soon as the command runs and the container outlives both the
// runner invocation and the SSH session.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	// startingGrace is how long a container directory without a pid file
	// counts as still starting; after that it is reported exited with -1.
	startingGrace = 2 * startTimeout
	// basePATH is the PATH of every command unless its spec sets one.
	basePATH = "/usr/local/bin:/usr/bin:/bin"
)

// Files in a container directory (see the comment at the top of this file).
const (
	fileSpec       = "spec.json"
	fileSupervisor = "supervisor"
	fileStdout     = "stdout"
	fileStderr     = "stderr"
	fileStartedAt  = "started_at"
	filePIDStart   = "pid_start"
	filePID        = "pid"
	fileFinishedAt = "finished_at"
	fileExit       = "exit"
	fileError      = "error"
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

// ExecutableHash returns the sha256 (hex) of the running executable.
func ExecutableHash() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	return FileHash(path)
}

// FileHash returns the sha256 (hex) of the file at path: what "runner
// version" reports for a runner installed from it.
func FileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

const workerUsage = "usage: runner version | start <id> (spec JSON on stdin) | list | kill <id> [--signal TERM|KILL] | logs <id> [--tail N] | forget <id> | batch (JSON requests on stdin)"

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
	if err := os.Mkdir(dir, 0o700); err != nil {
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
	body, err := json.Marshal(&spec)
	if err == nil {
		err = writeFileAtomic(dir, fileSpec, body)
	}
	if err != nil {
		return w.fail(1, "runner start %s: writing spec: %v", id, err)
	}
	if err := w.launch(root, dir, id); err != nil {
		return w.fail(1, "runner start %s: %v", id, err)
	}
	started = true
	return 0
}

// launch starts the supervisor of container id and waits until it reports
// that the command runs (pid written) or that it could not start it.
func (w *worker) launch(root, dir, id string) error {
	return w.launchMany(root, []string{id})[0]
}

// launchMany starts one supervisor for the containers ids (their
// directories under root hold their specs) and waits until it reports, for
// each, that the command runs (pid written) or that it could not start it.
// It returns one error (or nil) per id.
func (w *worker) launchMany(root string, ids []string) []error {
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
	args := append([]string{self}, w.env.SelfArgs...)
	args = append(args, "supervise", "--dir", root, "--ready-fd", "3", "--grace", w.env.KillGrace.String())
	args = append(args, ids...)
	cmd := &exec.Cmd{
		Path:       self,
		Args:       args,
		Dir:        "/",
		Stdin:      devnull,
		Stdout:     devnull,
		Stderr:     devnull,
		ExtraFiles: []*os.File{pw},
		// A new session: no controlling terminal, and not in the process
		// group the SSH server signals when the session ends.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fill(fmt.Errorf("starting the supervisor %s: %w", self, err))
	}
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
		case "ok":
			reported[i] = true
			left--
			if _, err := os.Stat(filepath.Join(root, id, filePID)); err != nil {
				errs[i] = fmt.Errorf("supervisor reported a start but wrote no pid: %v", err)
			}
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
			if pid, _, err := readPIDFile(filepath.Join(root, id, filePID)); err == nil && pid > 1 {
				syscall.Kill(-pid, syscall.SIGKILL)
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
// A container is exited once its exit file exists. Without one it is
// running while its command is alive, and also while its supervisor is
// alive (the command just ended and the supervisor is about to write exit).
// When both are gone without an exit file (the supervisor was killed) it is
// exited with code -1. A directory without a pid file is starting for
// startingGrace after the spec was written, then exited with -1.
func (w *worker) status(dir, id string) Status {
	st := Status{ID: id, State: StateRunning}
	pid, _, pidErr := readPIDFile(filepath.Join(dir, filePID))
	if pidErr == nil {
		st.PID = pid
	}
	st.StartedAt = readTime(filepath.Join(dir, fileStartedAt))
	if st.StartedAt.IsZero() {
		st.StartedAt = modTime(filepath.Join(dir, filePID))
	}
	if st.StartedAt.IsZero() {
		st.StartedAt = modTime(filepath.Join(dir, fileSpec))
	}
	if w.readExit(dir, &st) {
		return st
	}
	if pidErr != nil {
		// "start" makes the directory, then writes the spec: a directory
		// with neither pid nor spec yet is starting too.
		born := modTime(filepath.Join(dir, fileSpec))
		if born.IsZero() {
			born = modTime(dir)
		}
		if since := w.env.Now().Sub(born); since >= 0 && since < startingGrace {
			return st // starting
		}
		if w.readExit(dir, &st) {
			return st
		}
		st.State, st.ExitCode = StateExited, -1
		return st
	}
	if alive(pid, readString(filepath.Join(dir, filePIDStart))) {
		return st
	}
	if spid, sstart, err := readPIDFile(filepath.Join(dir, fileSupervisor)); err == nil && alive(spid, sstart) {
		return st // the supervisor is recording the exit
	}
	if w.readExit(dir, &st) { // written between the checks above
		return st
	}
	st.State, st.ExitCode = StateExited, -1
	return st
}

// readExit fills the exit code and finished time from the exit file and
// reports whether there is one.
func (w *worker) readExit(dir string, st *Status) bool {
	code, err := strconv.Atoi(readString(filepath.Join(dir, fileExit)))
	if err != nil {
		return false
	}
	st.State, st.ExitCode = StateExited, code
	st.FinishedAt = readTime(filepath.Join(dir, fileFinishedAt))
	if st.FinishedAt.IsZero() {
		st.FinishedAt = modTime(filepath.Join(dir, fileExit))
	}
	return true
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
	if alive(st.PID, readString(filepath.Join(dir, filePIDStart))) && st.PID > 1 {
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
	if err := os.RemoveAll(gone); err != nil {
		return w.fail(1, "runner forget %s: removing %s: %v", id, gone, err)
	}
	return 0
}

// ---- files and processes ----

// writeFileAtomic writes dir/name through a temporary file and a rename,
// so readers see either no file or the whole content.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readTime(path string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, readString(path))
	if err != nil {
		return time.Time{}
	}
	return t
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime().UTC()
}

func formatTime(t time.Time) []byte {
	return []byte(t.UTC().Format(time.RFC3339Nano) + "\n")
}

// readPIDFile reads "<pid>[ <starttime>]".
func readPIDFile(path string) (pid int, start string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
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
// ticks (field 22, as text) of pid from /proc/<pid>/stat.
func procStat(pid int) (state byte, start string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) == 0 {
		return 0, "", fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return f[0][0], f[19], nil
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
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64*1024), 2*maxSpecBytes+4096)
	var reqs []Request
	var parseErrs []error
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r Request
		err := json.Unmarshal(b, &r)
		reqs = append(reqs, r)
		parseErrs = append(parseErrs, err)
	}
	if err := sc.Err(); err != nil {
		return w.fail(2, "runner batch: reading requests: %v", err)
	}
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
	bw := bufio.NewWriter(w.stdout)
	enc := json.NewEncoder(bw)
	for i := range replies {
		if err := enc.Encode(&replies[i]); err != nil {
			return w.fail(1, "runner batch: %v", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return w.fail(1, "runner batch: %v", err)
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
		if err := os.Mkdir(dir, 0o700); err != nil {
			if errors.Is(err, fs.ErrExist) {
				failf(i, 1, "container %s already exists (forget it first, or use a new id)", r.ID)
			} else {
				failf(i, 1, "runner start %s: %v", r.ID, err)
			}
			continue
		}
		body, err := json.Marshal(&spec)
		if err == nil {
			err = writeFileAtomic(dir, fileSpec, body)
		}
		if err != nil {
			os.RemoveAll(dir)
			failf(i, 1, "runner start %s: writing spec: %v", r.ID, err)
			continue
		}
		ids = append(ids, r.ID)
		idx = append(idx, i)
	}
	if len(ids) == 0 {
		return
	}
	for k, err := range w.launchMany(root, ids) {
		if err != nil {
			os.RemoveAll(filepath.Join(root, ids[k]))
			failf(idx[k], 1, "runner start %s: %v", ids[k], err)
		}
	}
}
