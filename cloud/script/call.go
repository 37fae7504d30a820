// Running one [cloud.script] command: argv, JSON in, bounded output, timeout, errors mapped.

package script

// Running one command of [cloud.script]: argv without a shell, JSON on
// stdin, a bounded stdout, the tail of stderr, a timeout after which the
// command and everything it started are killed, and the exit status mapped
// onto the pool's error kinds.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/termsafe"
)

const (
	// maxStdout bounds what a command may print (a list of many
	// instances fits many times over).
	maxStdout = 16 << 20
	// stderrTail is how much of the end of stderr is kept: its last line
	// becomes the error message.
	stderrTail = 64 << 10
	// maxMessage bounds the stderr line shown in an error.
	maxMessage = 300
	// waitDelay is how long the driver waits for the command's output to
	// close once it has exited or been killed: a child it left behind
	// holding stdout must not hold the call.
	waitDelay = 2 * time.Second
)

// DefaultRetryAfter is the pause after a rate-limited command that did
// not say how long to wait.
const DefaultRetryAfter = 30 * time.Second

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - stderrTail; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// limitBuffer keeps up to maxStdout bytes and notes whether more came.
type limitBuffer struct {
	b    bytes.Buffer
	over bool
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	if room := maxStdout - l.b.Len(); len(p) > room {
		l.b.Write(p[:max(room, 0)])
		l.over = true
		return len(p), nil
	}
	l.b.Write(p)
	return len(p), nil
}

// commandName is how errors and logs name the command of verb: the
// [cloud.script] key and the program, so an operator knows which to fix.
func (d *Driver) commandName(verb string) string {
	argv := d.argv(verb)
	if len(argv) == 0 {
		return verb + " command (not configured)"
	}
	return fmt.Sprintf("%s command %q", verb, argv[0])
}

func (d *Driver) argv(verb string) []string {
	switch verb {
	case VerbCreate:
		return d.opts.Create
	case VerbList:
		return d.opts.List
	case VerbDestroy:
		return d.opts.Destroy
	case VerbSetTags:
		return d.opts.SetTags
	}
	return nil
}

// run runs the command of verb with input as JSON on stdin and returns
// what it printed on stdout. A failure is an error of the pool's kinds,
// naming the command and showing its last stderr line; providerType is
// the type a create asked for ("" for the other verbs).
func (d *Driver) run(ctx context.Context, verb, providerType string, input any) ([]byte, error) {
	argv := d.argv(verb)
	name := d.commandName(verb)
	if len(argv) == 0 {
		return nil, &cloud.PermanentError{Err: fmt.Errorf("script driver: no %s: set %s in [cloud.script]", name, verb)}
	}
	stdin, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("script driver: encode the input of the %s: %w", name, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(callCtx, argv[0], argv[1:]...)
	cmd.Env = append(d.env(), EnvVerb+"="+verb, EnvTimeout+"="+strconv.Itoa(int(d.opts.Timeout.Seconds())))
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout limitBuffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ownGroup(cmd)
	cmd.WaitDelay = waitDelay
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, &cloud.PermanentError{Err: fmt.Errorf("script driver: the %s cannot be run: %v: check the path in [cloud.script] %s and that the file is executable", name, unwrapExec(err), verb)}
	}
	err = cmd.Wait()
	killGroup(cmd) // whatever it left running
	d.log.Debug("script driver: command ran", "verb", verb, "took", time.Since(start), "err", err)

	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("script driver: %s: %w", name, ctx.Err())
	case callCtx.Err() != nil:
		return nil, fmt.Errorf("script driver: the %s did not finish within %s and was killed (raise timeout in [cloud.script] if it needs longer)", name, d.opts.Timeout)
	case stdout.over:
		return nil, fmt.Errorf("script driver: the %s printed more than %d MiB on stdout", name, maxStdout>>20)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil, d.exitError(name, providerType, exit.ExitCode(), stderr.b)
	}
	if err != nil {
		return nil, fmt.Errorf("script driver: %s: %w", name, err)
	}
	return stdout.b.Bytes(), nil
}

// unwrapExec drops exec's "fork/exec PATH:" prefix, which repeats the
// path the message already names.
func unwrapExec(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// exitError maps a command's non-zero exit status onto the pool's kinds.
// A per-type capacity refusal outside a create (providerType "") is taken
// as the whole provider's.
func (d *Driver) exitError(name, providerType string, code int, stderr []byte) error {
	msg := lastLine(stderr)
	err := fmt.Errorf("script driver: the %s exited %d: %s", name, code, msg)
	switch code {
	case ExitCapacityType, ExitCapacityAll:
		if code == ExitCapacityAll {
			providerType = ""
		}
		return &cloud.CapacityError{InstanceType: providerType, Err: err}
	case ExitQuota:
		return &cloud.QuotaError{Err: err}
	case ExitRateLimit:
		return &cloud.RateLimitError{RetryAfter: d.opts.Now().Add(retryAfter(stderr)), Err: err}
	case ExitPermanent, exitShellCannotRun, exitShellNotFound:
		return &cloud.PermanentError{Err: fmt.Errorf("%w (an operator has to act: check the command, its credentials and [cloud.script])", err)}
	}
	return err
}

// lastLine is the last non-empty line of stderr, made safe for a
// terminal and bounded; "(nothing on stderr)" when there is none.
func lastLine(stderr []byte) string {
	lines := strings.Split(strings.TrimRight(string(stderr), "\r\n\t "), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return "(nothing on stderr)"
	}
	if len(line) > maxMessage {
		line = line[:maxMessage] + "…"
	}
	return termsafe.Escape(line)
}

// retryAfter reads the last "retry-after:" line of stderr: whole seconds
// or a Go duration, at most an hour; DefaultRetryAfter without one.
func retryAfter(stderr []byte) time.Duration {
	wait := DefaultRetryAfter
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimSpace(line)
		if len(line) < len(RetryAfterPrefix) || !strings.EqualFold(line[:len(RetryAfterPrefix)], RetryAfterPrefix) {
			continue
		}
		v := strings.TrimSpace(line[len(RetryAfterPrefix):])
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			wait = time.Duration(n) * time.Second
		} else if dur, err := time.ParseDuration(v); err == nil && dur > 0 {
			wait = dur
		}
	}
	return min(wait, time.Hour)
}
