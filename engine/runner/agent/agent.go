//go:build unix

// Package agent is the on-instance side of the runner protocol
// (docs/design.md §7.3): what "dispatch-tui runner <verb>" does on an
// instance. The protocol itself (specs, statuses, requests, the client the
// dispatcher uses) is package runner.
//
// Every container lives in a directory <StateDir>/<id>/ holding
//
//	stdout       the container's standard output; created (O_EXCL) by the
//	             supervisor, which is how it claims the directory
//	stderr       the container's standard error
//	pid_start    "<starttime> <started_at> <supervisor pid> <supervisor
//	             starttime> <pid> [h] [boot=<id>]\n": the command's start
//	             time in clock ticks (/proc/<pid>/stat, "-" when unknown),
//	             the RFC 3339 time it was started, the same for its
//	             supervisor, and its pid; "h" when a health check runs
//	             beside it, and the host's boot id (bootid.go); once the
//	             command ended, "<code> <finished_at>\n"
//	             follows (the exit code, 128+signal when killed, and the
//	             RFC 3339 time it ended), so list reads one file
//	exit         only for a command that could not be started (pid_start's
//	             line with pid 0, then the exit line), or one whose exit
//	             line could not be appended to pid_start
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
// per container was most of the cost of a start on ext4.
//
// "start" re-executes the runner binary as the hidden verb "supervise" in a
// new session, and sends it the specs on its stdin; the supervisor starts
// each command in yet another session (so the command leads its own
// process group and can be signalled as a group), writes pid_start, waits
// for it and appends the exit line. "serve" keeps its supervisors and
// feeds them frame after frame (launch.go). Neither the
// supervisor nor the command keeps the SSH session's stdin, stdout or
// stderr open, so "start" returns as soon as the command runs and the
// container outlives both the runner invocation and the SSH session.
package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"dispatch-tui/engine/runner"
)

// Defaults of Env.
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
	maxSpecBytes = runner.MaxSpecBytes
	// startTimeout bounds how long "start" waits for the supervisor to
	// report that the command runs.
	startTimeout = 5 * time.Second
	// startingGrace is how long a container directory without a pid record
	// counts as still starting; after that it is reported lost.
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
)

// Env is what Main needs from its surroundings.
type Env struct {
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

func (e *Env) fill() {
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

const usage = "usage: runner version | start <id> (spec JSON on stdin) | list [<id>] | kill <id> [--signal TERM|KILL] | logs <id> [--tail N] [--max-bytes N] | forget <id> | batch (JSON requests on stdin) | serve (frames of batch requests on stdin) | watch | clean"

// Main runs one runner verb with args (the words after "runner"), reading
// stdin and writing stdout/stderr; it returns the process exit code: 0 on
// success, 1 on an error, 2 on a usage error (bad arguments or a bad spec).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, env Env) int {
	env.fill()
	a := &agent{env: env, stdout: stdout, stderr: stderr}
	if len(args) > 0 && args[0] == "supervise" {
		return a.supervise(args[1:])
	}
	if len(args) > 0 && args[0] == "health" {
		return a.health(args[1:], stdin)
	}
	// "runner batch" (docs/design.md §9) reads one JSON request per line
	// on stdin (the same verbs and arguments, with the spec inline for
	// start) and writes one JSON reply per line on stdout, so that the
	// dispatcher pays for one SSH session and one process start per batch
	// instead of one per command. Consecutive starts share one detached
	// supervisor, so the containers outlive the batch and its session.
	cmd, err := runner.ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "%v; %s\n", err, usage)
		return 2
	}
	if cmd.ID != "" && !safeID(cmd.ID) {
		fmt.Fprintf(stderr, "runner %s: invalid container id %q: want [A-Za-z0-9_.-]{1,128}, not . or ..\n", cmd.Verb, cmd.ID)
		return 2
	}
	switch cmd.Verb {
	case "batch", "serve": // a batch's requests carry their epoch
	case "watch":
		// Checked once, at the start: a watch only reads, and holding the
		// lock for its whole life would hold off every raise.
		release, code := a.fence(cmd.Verb, cmd.Epoch)
		if code != 0 {
			return code
		}
		release()
	default:
		release, code := a.fence(cmd.Verb, cmd.Epoch)
		if code != 0 {
			return code
		}
		defer release()
	}
	switch cmd.Verb {
	case "version":
		return a.version()
	case "start":
		return a.start(cmd.ID, stdin)
	case "list":
		return a.list(cmd.ID)
	case "kill":
		return a.kill(cmd.ID, cmd.Signal)
	case "logs":
		code, dropped := a.logs(cmd.ID, cmd.Tail, cmd.MaxBytes)
		if dropped > 0 {
			// Said where a person reading the output sees it; a batch
			// reply carries the number instead.
			fmt.Fprintf(stderr, "runner logs %s: the first %d bytes of the output were dropped (over --max-bytes %d)\n", cmd.ID, dropped, cmd.MaxBytes)
		}
		return code
	case "forget":
		return a.forget(cmd.ID)
	case "batch":
		return a.batch(stdin)
	case "serve":
		return a.serve(stdin)
	case "watch":
		return a.watch(stdin)
	case "clean":
		return a.clean()
	}
	fmt.Fprintf(stderr, "runner: unknown verb %q; %s\n", cmd.Verb, usage)
	return 2
}

// safeID is ValidID minus "." and "..", which ValidID accepts but which
// would name the state directory itself or its parent.
func safeID(id string) bool {
	return runner.ValidID(id) && id != "." && id != ".."
}

type agent struct {
	env            Env
	stdout, stderr io.Writer
	// feeders, under serve only, are the session's supervisors.
	feeders *feederPool
	// starts, under supervise only (its loop's), tells its commands'
	// start times.
	starts startClock
}

// fail prints one line on stderr and returns code.
func (a *agent) fail(code int, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", " ")
	fmt.Fprintln(a.stderr, msg)
	return code
}

func (a *agent) version() int {
	hash := a.env.Hash
	if hash == "" {
		var err error
		if hash, err = runner.ExecutableHash(); err != nil {
			return a.fail(1, "runner version: %v", err)
		}
	}
	v := a.env.Version
	if v == "" {
		v = "unknown"
	}
	fmt.Fprintf(a.stdout, "%s %s\n", v, hash)
	return 0
}

// stateRoot returns the state directory, creating it (0700) when create is
// set. exists is false when it does not exist. It refuses a directory that
// is a symlink, belongs to another user or is writable by others: pid files
// there decide which processes "kill" signals.
func (a *agent) stateRoot(create bool) (root string, exists bool, err error) {
	root = a.env.StateDir
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
func (a *agent) containerDir(verb, id string) (string, int) {
	root, exists, err := a.stateRoot(false)
	if err != nil {
		return "", a.fail(1, "runner %s: %v", verb, err)
	}
	if !exists {
		return "", a.fail(1, "runner %s: no such container %s", verb, id)
	}
	dir := filepath.Join(root, id)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return "", a.fail(1, "runner %s: no such container %s", verb, id)
	}
	return dir, 0
}
