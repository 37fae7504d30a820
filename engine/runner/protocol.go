// Package runner holds the runner protocol of docs/design.md §7.3: the
// command lines the dispatcher sends to an instance, the JSON that travels on
// stdin and stdout, and a Client that speaks it through an Executor. The
// program that answers on the instance is package runner/agent.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Container states reported by "runner list".
const (
	StateRunning = "running"
	StateExited  = "exited"
)

// Why a runner lists a container exited with no exit code (Status.Lost):
// its supervisor, which waits for the command and records its exit, is
// gone and so is the command, with nothing recorded. That is no end of the
// program's own: the attempt is lost, like one on a destroyed instance.
const (
	// LostRebooted: the host booted again since the command started (its
	// boot id changed), so every process of that boot is gone.
	LostRebooted = "supervisor gone: host rebooted"
	// LostKilled: same boot, so the supervisor was killed (kill -9, the
	// OOM killer) and its command ended after it.
	LostKilled = "supervisor gone: runner killed"
	// LostUnknown: the runner cannot tell which (no boot id recorded, or
	// none to read).
	LostUnknown = "supervisor gone: host rebooted or runner killed"
)

// Signals accepted by "runner kill".
const (
	SignalTerm = "TERM"
	SignalKill = "KILL"
)

// Spec is what "runner start" reads as JSON on stdin. Commands and env only
// ever travel this way, never interpolated into a shell line.
type Spec struct {
	ID         string            `json:"id"`
	Command    []string          `json:"command"`
	Env        map[string]string `json:"env,omitempty"`
	Image      string            `json:"image,omitempty"`
	MaxRunTime time.Duration     `json:"max_run_time,omitempty"`
	// HealthCheck, when set, is run beside the command (health.go).
	// Runners before this field refuse a spec that has one.
	HealthCheck *HealthCheck `json:"health_check,omitempty"`
}

// Status is one line of "runner list" output.
type Status struct {
	ID         string    `json:"id"`
	PID        int       `json:"pid"`
	State      string    `json:"state"`
	ExitCode   int       `json:"exit_code"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Signal names the signal that ended the command ("TERM", "KILL", or
	// its number), "" when it exited by itself (even with code 128+n) or
	// the runner does not know. Runners before this field never set it.
	Signal string `json:"signal,omitempty"`
	// Lost, on an exited container, says why the runner has no exit for
	// it (LostRebooted, LostKilled, LostUnknown); ExitCode is then -1 and
	// FinishedAt zero, which is all runners before this field report.
	Lost string `json:"lost,omitempty"`
	// Health is the state of the container's health check; nil when it
	// has none (and from runners before this field). One pointer: every
	// pass copies the statuses of every runner's list.
	Health *Health `json:"health,omitempty"`
}

// Equal reports whether a and b are the same status, their health
// compared by value.
func (a Status) Equal(b Status) bool {
	ha, hb := a.Health, b.Health
	a.Health, b.Health = nil, nil
	return a == b && (ha == hb || ha != nil && hb != nil && *ha == *hb)
}

// EndReason says why the runner itself ended an exited command:
// EndUnhealthy when its health check killed it, else "" (it exited by
// itself, or was signalled by someone else: see Signal).
func (s *Status) EndReason() string {
	if s.State == StateExited && s.Health != nil && s.Health.Killed {
		return EndUnhealthy
	}
	return ""
}

// ValidID reports whether id matches [A-Za-z0-9_.-]{1,128} and is not "."
// or ".." (ids name directories on the instance).
func ValidID(id string) bool {
	if len(id) < 1 || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// ParseList parses "runner list" output: one JSON object per line; blank
// lines are ignored. A malformed line is an error naming its line number.
// A pool's probes read each runner's lists with a ListParser.
func ParseList(data []byte) ([]Status, error) { return parseList(data, nil) }

// InstallLine is the shell line that installs the runner binary (sent on
// stdin, size bytes) at path: write to a temporary name, check it holds
// size bytes, then rename. path is fixed by the dispatcher's config, never
// by user data.
//
// The temporary name carries the shell's pid because instances can share a
// file system (the local driver's all do): with one shared name, a second
// deploy truncating the file while the first renames it leaves a runner that
// is still open for writing ("Text file busy" on exec) and a chmod of a file
// that is gone. The size is checked because a cut install can end in a
// plain end of input: OpenSSH without privilege separation ignores the
// signal a deadline sends, the channel is closed, and cat exits 0 with part
// of the binary, which was then put in place. A failed install removes its
// temporary file.
func InstallLine(path string, size int64) string {
	q := "'" + path + "'"
	return "t=" + q + ".tmp.$$; cat > \"$t\" && [ $(($(wc -c < \"$t\"))) -eq " + strconv.FormatInt(size, 10) +
		" ] && chmod 0755 \"$t\" && mv -f \"$t\" " + q + " || { s=$?; rm -f \"$t\"; exit $s; }"
}

// InstallPath reports whether line is InstallLine(path, size) for some
// path and size, and that path. Executors that simulate instances use it
// to recognise installs.
func InstallPath(line string) (string, bool) {
	end := strings.LastIndexByte(line, '\'')
	if end <= 0 {
		return "", false
	}
	start := strings.LastIndexByte(line[:end], '\'')
	if start < 0 {
		return "", false
	}
	path := line[start+1 : end]
	const eq = " -eq "
	at := strings.Index(line, eq)
	if at < 0 {
		return "", false
	}
	digits := line[at+len(eq):]
	digits = digits[:max(0, strings.IndexByte(digits, ' '))]
	size, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return "", false
	}
	return path, line == InstallLine(path, size)
}

// Command is a parsed runner command line: "<path> runner <verb> [args...]".
type Command struct {
	Verb   string // version, start, list, kill, logs, forget, batch, serve, watch, clean
	ID     string // start, kill, logs, forget; list: that container only
	Signal string // kill: TERM or KILL
	Tail   int    // logs: 0 = all
	// MaxBytes (logs): at most this much of the output's end, cut as
	// DroppedFor says; 0 = no limit.
	MaxBytes int64
	// Epoch is the caller's leader epoch (--epoch, any verb; fence.go);
	// 0 = none.
	Epoch int64
}

// Line renders the command line run on the instance. Only validated ids and
// fixed words appear in it, so it is safe to hand to a remote shell.
func (c Command) Line(path string) string {
	var b strings.Builder
	b.Grow(len(path) + len(" runner ") + len(c.Verb) + 1 + len(c.ID) + len(" --epoch ") + 20) // most lines in one allocation
	b.WriteString(path)
	b.WriteString(" runner ")
	b.WriteString(c.Verb)
	if c.ID != "" {
		b.WriteByte(' ')
		b.WriteString(c.ID)
	}
	if c.Signal != "" {
		b.WriteString(" --signal ")
		b.WriteString(c.Signal)
	}
	if c.Tail > 0 {
		b.WriteString(" --tail ")
		b.WriteString(strconv.Itoa(c.Tail))
	}
	if c.MaxBytes > 0 {
		b.WriteString(" --max-bytes ")
		b.WriteString(strconv.FormatInt(c.MaxBytes, 10))
	}
	if c.Epoch > 0 {
		b.WriteString(" --epoch ")
		b.WriteString(strconv.FormatInt(c.Epoch, 10))
	}
	return b.String()
}

// ParseArgs parses the words after "runner" (e.g. ["kill","c1","--signal","KILL"]).
func ParseArgs(args []string) (Command, error) {
	if len(args) == 0 {
		return Command{}, errors.New("runner: missing verb (version|start|list|kill|logs|forget|batch|serve|watch|clean)")
	}
	c := Command{Verb: args[0]}
	rest := args[1:]
	needID := false
	switch c.Verb {
	case "version", "batch", "serve", "watch", "clean":
	case "list":
		// "list <id>" reads one container: what an exit notice asks for
		// (engine/worker/exitnotice.go).
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			needID = true
		}
	case "start", "forget":
		needID = true
	case "kill":
		needID = true
		c.Signal = SignalTerm
	case "logs":
		needID = true
	default:
		return Command{}, fmt.Errorf("runner: unknown verb %q", c.Verb)
	}
	if needID {
		if len(rest) == 0 {
			return Command{}, fmt.Errorf("runner %s: missing container id", c.Verb)
		}
		if !ValidID(rest[0]) {
			return Command{}, fmt.Errorf("runner %s: invalid container id %q", c.Verb, rest[0])
		}
		c.ID = rest[0]
		rest = rest[1:]
	}
	for len(rest) > 0 {
		switch {
		case c.Verb == "kill" && rest[0] == "--signal" && len(rest) > 1:
			if rest[1] != SignalTerm && rest[1] != SignalKill {
				return Command{}, fmt.Errorf("runner kill: invalid signal %q (TERM or KILL)", rest[1])
			}
			c.Signal = rest[1]
			rest = rest[2:]
		case c.Verb == "logs" && rest[0] == "--tail" && len(rest) > 1:
			n, err := strconv.Atoi(rest[1])
			if err != nil || n < 0 {
				return Command{}, fmt.Errorf("runner logs: invalid --tail %q", rest[1])
			}
			c.Tail = n
			rest = rest[2:]
		case c.Verb == "logs" && rest[0] == "--max-bytes" && len(rest) > 1:
			n, err := strconv.ParseInt(rest[1], 10, 64)
			if err != nil || n < 0 || n > MaxOutputLimit {
				return Command{}, fmt.Errorf("runner logs: invalid --max-bytes %q (0 to %d)", rest[1], MaxOutputLimit)
			}
			c.MaxBytes = n
			rest = rest[2:]
		case rest[0] == "--epoch" && len(rest) > 1:
			n, err := strconv.ParseInt(rest[1], 10, 64)
			if err != nil || n < 0 {
				return Command{}, fmt.Errorf("runner %s: invalid --epoch %q", c.Verb, rest[1])
			}
			c.Epoch = n
			rest = rest[2:]
		default:
			return Command{}, fmt.Errorf("runner %s: unexpected argument %q", c.Verb, rest[0])
		}
	}
	return c, nil
}

// ParseLine splits a command line produced by Command.Line back into the
// runner path and the command. It is what an in-memory executor uses.
func ParseLine(line string) (path string, c Command, err error) {
	f := strings.Fields(line)
	if len(f) < 3 || f[1] != "runner" {
		return "", Command{}, fmt.Errorf("not a runner command line: %q", line)
	}
	c, err = ParseArgs(f[2:])
	return f[0], c, err
}

// ExitError is returned by an Executor when the remote command ran and exited
// non-zero.
type ExitError struct {
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return fmt.Sprintf("exit status %d: %s", e.Code, msg)
}

// ErrNotSent is matched (errors.Is) by an Executor error when the command
// certainly never reached the instance: no connection could be made or no
// session opened. Any other transport error leaves it unknown whether the
// command ran.
var ErrNotSent = errors.New("command not sent")

// NotSent marks err as one where the command never reached the instance.
func NotSent(err error) error { return &notSentError{err} }

type notSentError struct{ err error }

func (e *notSentError) Error() string        { return e.err.Error() }
func (e *notSentError) Unwrap() error        { return e.err }
func (e *notSentError) Is(target error) bool { return target == ErrNotSent }

// Executor runs command lines on one instance (over SSH in production).
type Executor interface {
	// Execute runs cmd with stdin (may be nil) and returns its output. A
	// command that ran and exited non-zero returns an *ExitError; one that
	// never reached the instance returns an error matching ErrNotSent.
	Execute(ctx context.Context, cmd string, stdin []byte) (stdout, stderr []byte, err error)
	// Close releases the connection.
	Close() error
}

// SessionExecutor is an Executor that can also keep one command running
// on the instance and exchange frames with it: how Client sends batches to
// a long-lived "runner serve" (docs/design.md §9) instead of paying for an SSH
// session and a process start per call.
type SessionExecutor interface {
	Executor
	// Exchange writes frame (lines ending in "\n", the last one empty) to
	// the stdin of a session running cmd, starting one if none is free,
	// and returns what cmd writes back up to and including the next empty
	// line. Errors are as Execute's: one that matches ErrNotSent means the
	// frame never reached cmd whole, so nothing of it ran.
	Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error)
}

// Client speaks the runner protocol to one instance through an Executor.
type Client struct {
	Exec Executor
	Path string // runner executable on the instance
	// Epoch is the leader epoch every call carries (fence.go); 0 = a
	// single dispatcher, nothing checked.
	Epoch int64
	// Lists, if set, parses what List reads: the lists of one runner
	// read one after another share their ids (ListParser).
	Lists *ListParser
}

func (c *Client) run(ctx context.Context, cmd Command, stdin []byte) ([]byte, error) {
	if cmd.Verb != "batch" { // a batch's requests carry it
		cmd.Epoch = c.Epoch
	}
	out, stderr, err := c.Exec.Execute(ctx, cmd.Line(c.Path), stdin)
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) && ee.Stderr == "" {
			ee.Stderr = string(stderr)
		}
		return out, fmt.Errorf("runner %s: %w", cmd.Verb, err)
	}
	return out, nil
}

// Version returns the runner's "<version> <sha256>" line.
func (c *Client) Version(ctx context.Context) (string, error) {
	out, err := c.run(ctx, Command{Verb: "version"}, nil)
	return strings.TrimSpace(string(out)), err
}

// Start starts a container detached on the instance.
func (c *Client) Start(ctx context.Context, spec Spec) error {
	if err := ValidateSpec(&spec); err != nil {
		return err
	}
	body, err := json.Marshal(&spec)
	if err != nil {
		return err
	}
	_, err = c.run(ctx, Command{Verb: "start", ID: spec.ID}, body)
	return err
}

// List returns the containers the runner knows.
func (c *Client) List(ctx context.Context) ([]Status, error) {
	if _, ok := c.Exec.(SessionExecutor); ok {
		replies, err := c.Batch(ctx, []Request{{Verb: "list"}})
		if err != nil {
			return nil, err
		}
		if err := replies[0].Err("list"); err != nil {
			return nil, err
		}
		return c.parseList(replies[0].Stdout)
	}
	out, err := c.run(ctx, Command{Verb: "list"}, nil)
	if err != nil {
		return nil, err
	}
	return c.parseList(out)
}

func (c *Client) parseList(data []byte) ([]Status, error) {
	if c.Lists != nil {
		return c.Lists.Parse(data)
	}
	return ParseList(data)
}

// Kill signals a container (TERM or KILL).
func (c *Client) Kill(ctx context.Context, id, signal string) error {
	_, err := c.run(ctx, Command{Verb: "kill", ID: id, Signal: signal}, nil)
	return err
}

// Logs returns a container's output (last tail lines when tail > 0), at
// most maxBytes of its end when maxBytes > 0. It goes as a batch of one,
// whose reply says how much the limit dropped.
func (c *Client) Logs(ctx context.Context, id string, tail int, maxBytes int64) (Output, error) {
	replies, err := c.Batch(ctx, []Request{{Verb: "logs", ID: id, Tail: tail, MaxBytes: maxBytes}})
	if err != nil {
		return Output{}, err
	}
	if err := replies[0].Err("logs"); err != nil {
		return Output{}, err
	}
	return replies[0].Output(), nil
}

// Forget removes a finished container's files.
func (c *Client) Forget(ctx context.Context, id string) error {
	_, err := c.run(ctx, Command{Verb: "forget", ID: id}, nil)
	return err
}

// Clean removes the directories forgotten containers left for reuse: what
// a host handed back should not keep.
func (c *Client) Clean(ctx context.Context) error {
	_, err := c.run(ctx, Command{Verb: "clean"}, nil)
	return err
}

// Request is one line of "runner batch" input: a verb with its arguments
// (the spec inline for start).
type Request struct {
	Verb   string `json:"verb"` // version, start, list, kill, logs, forget
	ID     string `json:"id,omitempty"`
	Signal string `json:"signal,omitempty"`
	Tail   int    `json:"tail,omitempty"`
	// MaxBytes is logs' --max-bytes.
	MaxBytes int64           `json:"max_bytes,omitempty"`
	Spec     json.RawMessage `json:"spec,omitempty"`
	// Epoch is the caller's leader epoch (fence.go); 0 = none.
	Epoch int64 `json:"epoch,omitempty"`
}

// ParseRequest reads a batch request as the command line it stands for,
// so a batch runs exactly what that command would: its arguments must
// parse (ParseArgs), and its verb must be one a batch may hold.
func ParseRequest(r Request) (Command, error) {
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
	if r.MaxBytes > 0 {
		args = append(args, "--max-bytes", strconv.FormatInt(r.MaxBytes, 10))
	}
	cmd, err := ParseArgs(args)
	if err != nil {
		return cmd, err
	}
	switch cmd.Verb {
	case "version", "start", "list", "kill", "logs", "forget":
		return cmd, nil
	}
	return cmd, fmt.Errorf("runner batch: verb %q not allowed in a batch", cmd.Verb)
}

// Reply is one line of "runner batch" output, for the request on the same
// line: what the single verb would have exited with and printed.
type Reply struct {
	Code   int    `json:"code"`
	Stdout []byte `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// Dropped (logs): bytes cut from the output's start by max_bytes
	// before Stdout, when that cut reached into what was asked for.
	Dropped int64 `json:"dropped,omitempty"`
}

// Deferred reports whether the runner did not run the request for want
// of room in the batch's replies (CodeDeferred): it is to be asked again.
func (r *Reply) Deferred() bool { return r.Code == CodeDeferred }

// Output is a logs reply's output.
func (r *Reply) Output() Output { return Output{Data: r.Stdout, Dropped: r.Dropped} }

// MaxBatch is the most requests of one verb the dispatcher sends in one
// "runner batch" (a forget sender's call carries up to MaxBatch forgets
// and MaxBatch logs).
const MaxBatch = 256

// Batch runs several requests in one "runner batch" call. It returns one
// reply per request; a request that failed has a non-zero Code. err is set
// (and replies nil) when the batch call itself failed.
func (c *Client) Batch(ctx context.Context, reqs []Request) ([]Reply, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i := range reqs {
		reqs[i].Epoch = c.Epoch
		if err := enc.Encode(&reqs[i]); err != nil {
			return nil, err
		}
	}
	var out []byte
	var err error
	if se, ok := c.Exec.(SessionExecutor); ok {
		in.WriteByte('\n')
		if out, err = se.Exchange(ctx, Command{Verb: "serve"}.Line(c.Path), in.Bytes()); err != nil {
			return nil, fmt.Errorf("runner serve: %w", err)
		}
	} else if out, err = c.run(ctx, Command{Verb: "batch"}, in.Bytes()); err != nil {
		return nil, err
	}
	replies, err := decodeReplies(out, len(reqs))
	if err != nil {
		return nil, err
	}
	if len(replies) != len(reqs) {
		return nil, fmt.Errorf("runner batch: %d replies to %d requests", len(replies), len(reqs))
	}
	return replies, nil
}

// Err returns the reply as an error (nil when Code is 0), as Client's
// single-verb methods report it.
func (r *Reply) Err(verb string) error {
	if r.Code == 0 {
		return nil
	}
	return fmt.Errorf("runner %s: %w", verb, &ExitError{Code: r.Code, Stderr: r.Stderr})
}

// StartMany starts several containers in one batch (one supervisor on the
// instance for all of them). It returns one error per spec, or err when the
// batch call itself failed (whether any of them started is then unknown).
func (c *Client) StartMany(ctx context.Context, specs []Spec) (errs []error, err error) {
	errs = make([]error, len(specs))
	reqs := make([]Request, 0, len(specs))
	idx := make([]int, 0, len(specs))
	for i := range specs {
		if errs[i] = ValidateSpec(&specs[i]); errs[i] != nil {
			continue
		}
		body, err := json.Marshal(&specs[i])
		if err != nil {
			errs[i] = err
			continue
		}
		reqs = append(reqs, Request{Verb: "start", ID: specs[i].ID, Spec: body})
		idx = append(idx, i)
	}
	replies, err := c.Batch(ctx, reqs)
	if err != nil {
		return nil, err
	}
	for k, r := range replies {
		errs[idx[k]] = r.Err("start")
	}
	return errs, nil
}
