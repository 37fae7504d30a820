// Package sshexec implements runner.Executor over SSH (docs/design.md §6, §7.3, §8).
//
// An Executor keeps one multiplexed SSH connection to one instance and runs
// every command in a new session on it, so concurrent calls share a single
// TCP connection. The connection is dialed lazily, checked against the
// caller's host key policy (KnownHosts or Pinned) and, when a per-instance
// secret is configured, against that secret before any other command runs.
// A broken connection is dropped and dialed again on the next call; one
// that stops answering (a network cut, which closes nothing) is found by
// keepalive requests and dropped the same way (keepalive.go).
package sshexec

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/engine/runner"
)

// Defaults for zero Options fields.
const (
	DefaultDialTimeout    = 10 * time.Second
	DefaultCommandTimeout = 60 * time.Second
	DefaultMaxOutput      = 64 << 20
	// DefaultMaxSessions matches OpenSSH's default MaxSessions: sshd refuses
	// more concurrent sessions than that on one connection.
	DefaultMaxSessions = 10
	// DefaultKeepaliveInterval and DefaultKeepaliveTimeout: a connection
	// that has not answered a keepalive within interval+timeout is closed.
	DefaultKeepaliveInterval = 5 * time.Second
	DefaultKeepaliveTimeout  = 10 * time.Second
	// DefaultSecretCommand prints the instance's secret, relative to the
	// login directory. The local driver writes that file into each sandbox
	// and sshhosts writes it when it claims a host.
	DefaultSecretCommand = "cat .dispatch-tui-secret"
)

// defaultKillGrace is how long a cancelled session may take to be torn down
// before the whole connection is presumed hung and closed.
const defaultKillGrace = 5 * time.Second

var (
	// ErrSecretMismatch is wrapped when the instance does not hold the
	// secret recorded in its tags. The connection is dropped.
	ErrSecretMismatch = errors.New("instance secret mismatch")
	// ErrOutputLimit is wrapped when stdout or stderr exceeded
	// Options.MaxOutput; the output returned is truncated.
	ErrOutputLimit = errors.New("command output exceeds limit")
	// ErrClosed is wrapped by Execute after Close.
	ErrClosed = errors.New("ssh executor closed")
)

// Options configure an Executor.
type Options struct {
	Address string // host:port
	User    string
	Signer  ssh.Signer // client key
	// HostKeyCallback is required: from KnownHosts(file) or Pinned(key).
	// Any error it returns is reported as wrapping ErrHostKey.
	HostKeyCallback ssh.HostKeyCallback
	// HostKeyAlgorithms restricts the host key algorithms offered; nil
	// means the library's defaults. When nil and the server presents a key
	// of a type the callback has no key of (say ecdsa while known_hosts
	// lists ed25519), the Executor redials once offering only the known
	// key types, and keeps using those.
	HostKeyAlgorithms []string

	DialTimeout time.Duration // TCP dial + SSH handshake; default 10s
	// CommandTimeout bounds each Execute (including any dial) unless ctx
	// has an earlier deadline, or a longer limit of the caller's own
	// (runner.WithCallLimit); default 60s.
	CommandTimeout time.Duration

	// Secret is the per-instance secret from the instance's tags
	// (cloud.TagSecret); "" = no check. After each (re)connect the
	// Executor runs SecretCommand and requires its trimmed output to equal
	// Secret before running anything else.
	Secret        string
	SecretCommand string // default DefaultSecretCommand

	// Env is sent with every session. Servers may refuse variables
	// (OpenSSH's AcceptEnv); refusals are ignored.
	Env map[string]string

	MaxOutput   int // cap on each of stdout and stderr; default 64 MiB
	MaxSessions int // concurrent sessions on the connection; default 10, <0 = unlimited

	// KeepaliveInterval is how often an open connection sends a
	// "keepalive@openssh.com" request; KeepaliveTimeout is how long it
	// waits for the reply (any reply, even a refusal) before closing the
	// connection, so that the next call dials a new one. Defaults 5s and
	// 10s (generous: dropping a slow but live connection fails the calls
	// on it); a negative interval turns keepalives off.
	KeepaliveInterval time.Duration
	KeepaliveTimeout  time.Duration
}

// Executor runs commands on one instance over one SSH connection. It
// implements runner.Executor and is safe for concurrent use.
type Executor struct {
	opts      Options
	envKeys   []string
	sem       chan struct{} // session slots; nil = unlimited
	killGrace time.Duration

	closeCtx context.Context
	closeFn  context.CancelFunc

	// mu guards the connection state. It is held while dialing so that
	// concurrent callers never dial twice at once; a dial is bounded by
	// DialTimeout plus the secret check and aborted by Close.
	mu           sync.Mutex
	client       *ssh.Client
	closed       bool
	hostKeyAlgos []string // learned after a host key type mismatch

	// serveMu guards idle: long-lived sessions (serve.go) by command.
	serveMu sync.Mutex
	idle    map[string][]*serveSession
}

var _ runner.Executor = (*Executor)(nil)

// New returns an Executor for opts. It does not dial: the connection is
// made on the first Execute. Invalid options are reported by Execute.
func New(opts Options) *Executor {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = DefaultCommandTimeout
	}
	if opts.SecretCommand == "" {
		opts.SecretCommand = DefaultSecretCommand
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.KeepaliveInterval == 0 {
		opts.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if opts.KeepaliveTimeout <= 0 {
		opts.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	e := &Executor{opts: opts, killGrace: defaultKillGrace}
	if opts.MaxSessions > 0 {
		e.sem = make(chan struct{}, opts.MaxSessions)
	}
	for k := range opts.Env {
		e.envKeys = append(e.envKeys, k)
	}
	sort.Strings(e.envKeys)
	e.closeCtx, e.closeFn = context.WithCancel(context.Background())
	return e
}

// commandTimeout is CommandTimeout, or the caller's own limit on the
// call when that is longer (runner.WithCallLimit): the caller's is the
// operator's timeout_runner_call, and an install may need more than the
// default minute.
func (e *Executor) commandTimeout(ctx context.Context) time.Duration {
	if d, ok := runner.CallLimit(ctx); ok && d > e.opts.CommandTimeout {
		return d
	}
	return e.opts.CommandTimeout
}

// Address returns the address the Executor dials.
func (e *Executor) Address() string { return e.opts.Address }

// Execute runs cmd on the instance in a new session with stdin (may be nil)
// and returns its output. A command that ran and exited non-zero returns a
// *runner.ExitError. When ctx is done or CommandTimeout passes, the session
// is sent SIGKILL and closed, and the returned error wraps ctx's error.
// Other errors are wrapped as "ssh <address>: ...".
func (e *Executor) Execute(ctx context.Context, cmd string, stdin []byte) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.commandTimeout(ctx))
	defer cancel()
	defer context.AfterFunc(e.closeCtx, cancel)()

	if e.sem != nil {
		select {
		case e.sem <- struct{}{}:
			defer func() { <-e.sem }()
		case <-ctx.Done():
			return nil, nil, runner.NotSent(e.wrap(ctx, ctx.Err()))
		}
	}
	for attempt := 0; ; attempt++ {
		c, fresh, err := e.getClient(ctx)
		if err != nil {
			return nil, nil, runner.NotSent(e.wrap(ctx, err))
		}
		r := e.run(ctx, c, cmd, stdin)
		if r.openErr != nil {
			if e.redial(ctx, c, fresh, attempt, r.openErr) {
				continue
			}
			return nil, nil, runner.NotSent(e.wrap(ctx, r.openErr))
		}
		var xe *runner.ExitError
		if r.err != nil && !errors.As(r.err, &xe) {
			r.err = e.wrap(ctx, r.err)
		}
		return r.stdout, r.stderr, r.err
	}
}

// redial is what to do when a session could not be opened on c: unless
// the server merely refused the channel, the connection is gone and is
// dropped; nothing ran, so true means to try once more on a new one (c was
// reused, and may have died while idle).
func (e *Executor) redial(ctx context.Context, c *ssh.Client, fresh bool, attempt int, openErr error) bool {
	var refused *ssh.OpenChannelError
	if errors.As(openErr, &refused) {
		return false
	}
	e.drop(c)
	return !fresh && attempt == 0 && ctx.Err() == nil
}

// setenv asks for the configured environment on s (a refusal is fine).
func (e *Executor) setenv(s *ssh.Session) {
	for _, k := range e.envKeys {
		_ = s.Setenv(k, e.opts.Env[k])
	}
}

// Close closes the connection. In-flight and later calls fail with an
// error wrapping ErrClosed.
func (e *Executor) Close() error {
	e.closeFn() // aborts a dial in progress, which holds mu
	e.mu.Lock()
	e.closed = true
	c := e.client
	e.client = nil
	e.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("ssh %s: close: %w", e.opts.Address, err)
	}
	return nil
}

// wrap adds the address to a non-exit error, reporting a done ctx or a
// closed Executor in preference to whatever error that caused.
func (e *Executor) wrap(ctx context.Context, err error) error {
	switch {
	case e.closeCtx.Err() != nil:
		return fmt.Errorf("ssh %s: %w", e.opts.Address, ErrClosed)
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("ssh %s: %w (%v)", e.opts.Address, ctx.Err(), err)
	}
	return fmt.Errorf("ssh %s: %w", e.opts.Address, err)
}

// getClient returns the current connection, dialing one (and checking the
// secret) if there is none. fresh reports that it was dialed by this call.
func (e *Executor) getClient(ctx context.Context) (c *ssh.Client, fresh bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.closeCtx.Err() != nil {
		return nil, false, ErrClosed
	}
	if e.client != nil {
		return e.client, false, nil
	}
	c, err = e.connect(ctx)
	if err != nil {
		return nil, false, err
	}
	e.client = c
	gone := make(chan struct{})
	go func() {
		_ = c.Wait()
		close(gone)
		e.drop(c)
	}()
	if e.opts.KeepaliveInterval > 0 {
		go e.keepalive(c, gone)
	}
	return c, true, nil
}

// drop closes c and forgets it if it is the current connection. It closes
// first so that it never waits for mu to unblock a hung connection.
func (e *Executor) drop(c *ssh.Client) {
	_ = c.Close()
	e.mu.Lock()
	if e.client == c {
		e.client = nil
	}
	e.mu.Unlock()
}

// connect dials, authenticates and checks the secret. Called with mu held.
func (e *Executor) connect(ctx context.Context) (*ssh.Client, error) {
	switch {
	case e.opts.Address == "":
		return nil, errors.New("sshexec: Options.Address is required")
	case e.opts.User == "":
		return nil, errors.New("sshexec: Options.User is required")
	case e.opts.Signer == nil:
		return nil, errors.New("sshexec: Options.Signer is required")
	case e.opts.HostKeyCallback == nil:
		return nil, errors.New("sshexec: Options.HostKeyCallback is required")
	}
	dctx, cancel := context.WithTimeout(ctx, e.opts.DialTimeout)
	defer cancel()

	algos := e.opts.HostKeyAlgorithms
	if algos == nil {
		algos = e.hostKeyAlgos
	}
	c, err := e.dial(dctx, algos)
	var hk *HostKeyError
	if err != nil && algos == nil && errors.As(err, &hk) && hk.typeMismatch() {
		// The server presented a key type we have no key of; it may
		// still hold the known key under another algorithm.
		retry := algorithmsFor(hk.Known)
		c2, err2 := e.dial(dctx, retry)
		switch {
		case err2 == nil:
			c, err = c2, nil
			e.hostKeyAlgos = retry
		case errors.Is(err2, ErrHostKey) || dctx.Err() != nil:
			err = err2
		default:
			err = fmt.Errorf("%w (offering only %v: %v)", err, retry, err2)
		}
	}
	if err != nil {
		return nil, err
	}
	if e.opts.Secret != "" {
		if err := e.checkSecret(ctx, c); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

// dial opens the TCP connection and runs the SSH handshake, both bounded by
// ctx (which Close cancels).
func (e *Executor) dial(ctx context.Context, algos []string) (*ssh.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.opts.Address)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	cfg := &ssh.ClientConfig{
		User:              e.opts.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(e.opts.Signer)},
		HostKeyCallback:   wrapHostKeyCallback(e.opts.HostKeyCallback),
		HostKeyAlgorithms: algos,
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, e.opts.Address, cfg)
	if !stop() {
		// ctx ended during the handshake and closed conn.
		if err == nil {
			_ = sc.Close()
		}
		return nil, fmt.Errorf("ssh handshake: %w", ctx.Err())
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// checkSecret runs SecretCommand on a new connection.
func (e *Executor) checkSecret(ctx context.Context, c *ssh.Client) error {
	cmd := e.opts.SecretCommand
	r := e.run(ctx, c, cmd, nil)
	err := r.openErr
	if err == nil {
		err = r.err
	}
	var xe *runner.ExitError
	switch {
	case err != nil && errors.As(err, &xe):
		return fmt.Errorf("%w: %q failed: %v", ErrSecretMismatch, cmd, err)
	case err != nil:
		return fmt.Errorf("secret check: %w", err)
	case subtle.ConstantTimeCompare(bytes.TrimSpace(r.stdout), []byte(e.opts.Secret)) != 1:
		return fmt.Errorf("%w: %q did not print the secret recorded for this instance", ErrSecretMismatch, cmd)
	}
	return nil
}

type runResult struct {
	stdout, stderr []byte
	openErr        error // the session could not be opened; nothing ran
	err            error // *runner.ExitError, ctx's error, or another failure
}

// run runs cmd in a new session on c. When ctx ends it sends SIGKILL and
// closes the session; if the session is not torn down within killGrace (or
// could not even be opened) the connection is presumed hung and closed.
// run returns only once the session's goroutines are done.
func (e *Executor) run(ctx context.Context, c *ssh.Client, cmd string, stdin []byte) (r runResult) {
	var (
		mu       sync.Mutex // guards the fields below, shared with the ctx hook
		sess     *ssh.Session
		finished bool
		grace    *time.Timer
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		if finished {
			mu.Unlock()
			return
		}
		s := sess
		grace = time.AfterFunc(e.killGrace, func() {
			mu.Lock()
			f := finished
			mu.Unlock()
			if !f {
				e.drop(c)
			}
		})
		mu.Unlock()
		if s != nil {
			_ = s.Signal(ssh.SIGKILL) // best effort; OpenSSH ignores it
			_ = s.Close()
		}
	})
	defer func() {
		stop()
		mu.Lock()
		finished = true
		if grace != nil {
			grace.Stop()
		}
		mu.Unlock()
	}()

	s, err := c.NewSession()
	if err != nil {
		if ctx.Err() != nil {
			r.err = ctx.Err()
		} else {
			r.openErr = err
		}
		return r
	}
	defer s.Close()
	mu.Lock()
	sess = s
	mu.Unlock()
	if ctx.Err() != nil { // the hook may have run before sess was set
		r.err = ctx.Err()
		return r
	}

	e.setenv(s)
	out := &capBuffer{max: e.opts.MaxOutput}
	errOut := &capBuffer{max: e.opts.MaxOutput}
	s.Stdout, s.Stderr = out, errOut
	var stdinW interface {
		Write([]byte) (int, error)
		Close() error
	}
	if len(stdin) > 0 {
		// Our own writer rather than Session.Stdin: a command that exits
		// without reading all of stdin must not turn into an error.
		if stdinW, err = s.StdinPipe(); err != nil {
			r.err = err
			return r
		}
	}
	if err := s.Start(cmd); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		r.err = err
		return r
	}
	var stdinDone chan struct{}
	if stdinW != nil {
		stdinDone = make(chan struct{})
		go func() {
			defer close(stdinDone)
			_, _ = stdinW.Write(stdin)
			_ = stdinW.Close()
		}()
	}
	err = s.Wait()
	if stdinDone != nil {
		// Wait returns once the channel is closed, which unblocks the writer.
		<-stdinDone
	}
	r.stdout, r.stderr = out.buf, errOut.buf
	if err != nil && ctx.Err() != nil {
		r.err = ctx.Err()
		return r
	}
	var xe *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case errors.As(err, &xe):
		r.err = &runner.ExitError{Code: xe.ExitStatus(), Stderr: stderrTail(errOut.buf, xe)}
	case errors.As(err, &missing):
		// Typically the connection died under the command; whether the
		// command ran, and how far, is unknown.
		r.err = fmt.Errorf("session ended without an exit status (connection lost?): %w", err)
	case err != nil:
		r.err = err
	case out.truncated || errOut.truncated:
		r.err = fmt.Errorf("%w (%d bytes per stream)", ErrOutputLimit, e.opts.MaxOutput)
	}
	return r
}

// maxErrStderr bounds the stderr kept in a runner.ExitError's message; the
// full stderr is still returned by Execute.
const maxErrStderr = 4096

func stderrTail(b []byte, xe *ssh.ExitError) string {
	if len(b) > maxErrStderr {
		b = append([]byte("..."), b[len(b)-maxErrStderr:]...)
	}
	s := string(b)
	if sig := xe.Signal(); sig != "" && len(bytes.TrimSpace(b)) == 0 {
		s = "killed by signal " + sig
	}
	return s
}

// capBuffer keeps the first max bytes written to it and drops the rest, so
// that the remote side is never blocked by a full buffer.
type capBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - len(b.buf); len(p) > room {
		p = p[:max(room, 0)]
		b.truncated = true
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// algorithmsFor returns the host key algorithms that verify keys of the
// given keys' types.
func algorithmsFor(keys []ssh.PublicKey) []string {
	var out []string
	for _, k := range keys {
		switch t := k.Type(); t {
		case ssh.KeyAlgoRSA:
			out = append(out, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
		default:
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
