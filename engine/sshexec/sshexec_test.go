//go:build unix

package sshexec

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// ---- keys ----

func newEd25519Signer(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newECDSASigner(t *testing.T) ssh.Signer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ---- in-process SSH server ----

// testServer is an SSH server on 127.0.0.1 that runs "exec" requests with
// /bin/sh -c in its directory, with public-key auth for one client key.
type testServer struct {
	addr     string
	dir      string
	hostKeys []ssh.Signer
	cfg      *ssh.ServerConfig
	ln       net.Listener

	accepted    atomic.Int32 // TCP connections accepted
	keepalives  atomic.Int32 // keepalive@openssh.com requests answered
	running     atomic.Int32 // commands running now
	maxRunning  atomic.Int32 // most commands running at once
	maxOpen     atomic.Int32 // most sessions open at once on one connection, in the client's order (serveChannels)
	execStarted chan string  // commands started (never blocks)
	execExited  chan string  // commands whose process exited (never blocks)

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

func newTestServer(t *testing.T, clientKey ssh.PublicKey, hostKeys ...ssh.Signer) *testServer {
	t.Helper()
	if len(hostKeys) == 0 {
		hostKeys = []ssh.Signer{newEd25519Signer(t)}
	}
	s := &testServer{
		dir:         t.TempDir(),
		hostKeys:    hostKeys,
		conns:       map[net.Conn]bool{},
		execStarted: make(chan string, 100),
		execExited:  make(chan string, 100),
	}
	want := clientKey.Marshal()
	s.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), want) {
				return nil, nil
			}
			return nil, errors.New("unauthorized key")
		},
	}
	for _, k := range hostKeys {
		s.cfg.AddHostKey(k)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.addr = ln.Addr().String()
	s.wg.Add(1)
	go s.acceptLoop()
	t.Cleanup(s.shutdown)
	return s
}

func (s *testServer) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			continue
		}
		s.conns[conn] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(conn)
	}
}

// waitExited waits until the server's process for cmd has exited,
// failing after 5s.
func (s *testServer) waitExited(t *testing.T, cmd string) {
	t.Helper()
	timeout := time.After(wait.Budget(5 * time.Second))
	for {
		select {
		case c := <-s.execExited:
			if c == cmd {
				return
			}
		case <-timeout:
			t.Fatalf("%q still running on the server", cmd)
		}
	}
}

// dropAll closes every connection the server holds.
func (s *testServer) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

func (s *testServer) shutdown() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *testServer) serveConn(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		conn.Close()
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	sc, chans, reqs, err := ssh.NewServerConn(conn, s.cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for r := range reqs {
			if r.Type == keepaliveRequest {
				s.keepalives.Add(1)
			}
			if r.WantReply {
				_ = r.Reply(false, nil) // as OpenSSH's sshd does
			}
		}
	}()
	s.serveChannels(chans)
}

// serveChannels accepts a connection's sessions and counts those open at
// once (maxOpen). It alone receives every session's requests and forwards
// them to the session's goroutine, so that it sees the end of each session
// the client closed before a session the client opened after: the
// connection's messages are handled in order, and a channel's requests end
// with the client's close of it, which the client sends before it gives
// the session's slot back. The count is then the client's, without races.
func (s *testServer) serveChannels(chans <-chan ssh.NewChannel) {
	type session struct {
		reqs <-chan *ssh.Request
		fwd  chan *ssh.Request
	}
	var open []session
	// next receives one request or end of a session, or (when chans is
	// not nil) a new channel: i is the session's index, or -1.
	next := func(chans <-chan ssh.NewChannel, block bool) (i int, v reflect.Value, ok, got bool) {
		cases := make([]reflect.SelectCase, 0, len(open)+2)
		for _, o := range open {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(o.reqs)})
		}
		if chans != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(chans)})
		}
		if !block {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectDefault})
		}
		i, v, ok = reflect.Select(cases)
		switch {
		case i < len(open):
			return i, v, ok, true
		case chans != nil && i == len(open):
			return -1, v, ok, true
		}
		return 0, v, false, false // the default case
	}
	take := func(i int, v reflect.Value, ok bool) {
		if ok {
			open[i].fwd <- v.Interface().(*ssh.Request)
			return
		}
		close(open[i].fwd)
		open = append(open[:i], open[i+1:]...)
	}
	for chans != nil || len(open) > 0 {
		i, v, ok, _ := next(chans, true)
		if i >= 0 {
			take(i, v, ok)
			continue
		}
		if !ok {
			chans = nil // the connection ended; its sessions end with it
			continue
		}
		// The ends of sessions that came before this open are ready to
		// receive by now: take them first.
		for {
			i, v, ok, got := next(nil, false)
			if !got {
				break
			}
			take(i, v, ok)
		}
		nc := v.Interface().(ssh.NewChannel)
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		fwd := make(chan *ssh.Request, 16)
		open = append(open, session{reqs: creqs, fwd: fwd})
		for n := int32(len(open)); ; {
			m := s.maxOpen.Load()
			if n <= m || s.maxOpen.CompareAndSwap(m, n) {
				break
			}
		}
		s.wg.Add(1)
		go s.serveSession(ch, fwd)
	}
}

func (s *testServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer s.wg.Done()
	defer ch.Close()
	var (
		mu      sync.Mutex
		proc    *os.Process // nil before start and after exit
		killed  bool
		started bool
		env     []string
	)
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		killed = true
		if proc != nil {
			syscall.Kill(-proc.Pid, syscall.SIGKILL)
		}
	}
	for req := range reqs {
		switch req.Type {
		case "env":
			var m struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &m) != nil || strings.HasPrefix(m.Name, "REFUSE") {
				req.Reply(false, nil)
				continue
			}
			env = append(env, m.Name+"="+m.Value)
			req.Reply(true, nil)
		case "exec":
			var m struct{ Command string }
			if started || ssh.Unmarshal(req.Payload, &m) != nil {
				req.Reply(false, nil)
				continue
			}
			cmd := exec.Command("/bin/sh", "-c", m.Command)
			cmd.Dir = s.dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir}, env...)
			// Like sshd, the exit is reported when the command exits,
			// whether or not the client has closed its stdin.
			if stdin, err := cmd.StdinPipe(); err == nil {
				go func() {
					io.Copy(stdin, ch)
					stdin.Close()
				}()
			}
			cmd.Stdout = ch
			cmd.Stderr = ch.Stderr()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.WaitDelay = 5 * time.Second
			mu.Lock()
			var err error
			n := s.running.Add(1)
			for {
				m := s.maxRunning.Load()
				if n <= m || s.maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			if killed {
				err = errors.New("session closed")
			} else if err = cmd.Start(); err == nil {
				proc = cmd.Process
			}
			mu.Unlock()
			if err != nil {
				s.running.Add(-1)
				req.Reply(false, nil)
				continue
			}
			started = true
			req.Reply(true, nil)
			select {
			case s.execStarted <- m.Command:
			default:
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				err := cmd.Wait()
				mu.Lock()
				proc = nil
				mu.Unlock()
				// Before the exit status, so the client cannot have
				// started another command yet.
				s.running.Add(-1)
				select {
				case s.execExited <- m.Command:
				default:
				}
				code := 0
				var xe *exec.ExitError
				if errors.As(err, &xe) {
					code = xe.ExitCode()
					if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						code = 128 + int(ws.Signal())
					}
				} else if err != nil {
					code = 255
				}
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
				ch.Close()
			}()
		case "signal":
			var m struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &m) == nil && (m.Signal == "KILL" || m.Signal == "TERM") {
				kill()
			}
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
	// The channel is closed: by us after exit, by the client, or with
	// the connection.
	kill()
}

// ---- fixtures ----

type fixture struct {
	srv    *testServer
	client ssh.Signer
}

func newFixture(t *testing.T, hostKeys ...ssh.Signer) *fixture {
	t.Helper()
	client := newEd25519Signer(t)
	return &fixture{srv: newTestServer(t, client.PublicKey(), hostKeys...), client: client}
}

// opts returns Options for f's server, pinned to its first host key.
func (f *fixture) opts() Options {
	return Options{
		Address:         f.srv.addr,
		User:            "test",
		Signer:          f.client,
		HostKeyCallback: Pinned(f.srv.hostKeys[0].PublicKey()),
		CommandTimeout:  20 * time.Second,
	}
}

func (f *fixture) executor(t *testing.T, o Options) *Executor {
	t.Helper()
	e := New(o)
	t.Cleanup(func() { e.Close() })
	return e
}

func writeKnownHosts(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustExec(t *testing.T, e *Executor, cmd string, stdin []byte) (string, string) {
	t.Helper()
	out, errOut, err := e.Execute(context.Background(), cmd, stdin)
	if err != nil {
		t.Fatalf("Execute(%q): %v", cmd, err)
	}
	return string(out), string(errOut)
}

// ---- tests ----

func TestExitCodesAndOutput(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())

	out, errOut := mustExec(t, e, "echo hello; echo warn >&2", nil)
	if out != "hello\n" || errOut != "warn\n" {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}

	outB, errB, err := e.Execute(context.Background(), "echo partial; echo oops >&2; exit 3", nil)
	var xe *runner.ExitError
	if !errors.As(err, &xe) || xe.Code != 3 {
		t.Fatalf("want *runner.ExitError code 3, got %#v", err)
	}
	if xe.Stderr != "oops\n" || string(outB) != "partial\n" || string(errB) != "oops\n" {
		t.Fatalf("exit error %q, stdout %q, stderr %q", xe.Stderr, outB, errB)
	}
	if got := err.Error(); got != "exit status 3: oops" {
		t.Fatalf("message %q", got)
	}

	// Exit codes go through runner.Client unchanged.
	c := &runner.Client{Exec: e, Path: "exit 7; :"}
	_, err = c.Version(context.Background())
	if !errors.As(err, &xe) || xe.Code != 7 {
		t.Fatalf("runner.Client: %v", err)
	}
	if n := f.srv.accepted.Load(); n != 1 {
		t.Fatalf("accepted %d connections, want 1", n)
	}
}

func TestStdin(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())

	big := make([]byte, 3<<20+17)
	rand.Read(big)
	out, _, err := e.Execute(context.Background(), "cat", big)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, big) {
		t.Fatalf("cat returned %d bytes, want %d identical", len(out), len(big))
	}

	if out, _ := mustExec(t, e, "wc -c | tr -d ' '", nil); out != "0\n" {
		t.Fatalf("nil stdin: %q", out)
	}
	// A command that ignores its stdin still succeeds.
	if out, _ := mustExec(t, e, "echo done", big); out != "done\n" {
		t.Fatalf("ignored stdin: %q", out)
	}
}

func TestEnv(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.Env = map[string]string{"FOO": "bar baz", "REFUSED_BY_SERVER": "x"}
	e := f.executor(t, o)
	out, _ := mustExec(t, e, `echo "$FOO|$REFUSED_BY_SERVER"`, nil)
	if out != "bar baz|\n" {
		t.Fatalf("env: %q", out)
	}
}

func TestOutputLimit(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.MaxOutput = 1000
	e := f.executor(t, o)
	out, _, err := e.Execute(context.Background(), "head -c 100000 /dev/zero", nil)
	if !errors.Is(err, ErrOutputLimit) || len(out) != 1000 {
		t.Fatalf("err %v, %d bytes", err, len(out))
	}
	if !strings.Contains(err.Error(), f.srv.addr) {
		t.Fatalf("error does not name the address: %v", err)
	}
	// Under the limit is fine.
	if out, _ := mustExec(t, e, "head -c 1000 /dev/zero", nil); len(out) != 1000 {
		t.Fatalf("%d bytes", len(out))
	}
}

func TestConcurrentExecutesShareOneConnection(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	const n = 8
	if err := os.Mkdir(filepath.Join(f.srv.dir, "barrier"), 0o755); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each command waits until all n are running at once.
			cmd := fmt.Sprintf(`touch barrier/%d; while [ "$(ls barrier | wc -l)" -lt %d ]; do sleep 0.01; done; echo %d`, i, n, i)
			out, _, err := e.Execute(context.Background(), cmd, nil)
			if err == nil && string(out) != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("command %d printed %q", i, out)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := f.srv.accepted.Load(); got != 1 {
		t.Fatalf("server accepted %d connections, want 1", got)
	}
	if got := f.srv.maxRunning.Load(); got != n {
		t.Fatalf("at most %d sessions at once, want %d", got, n)
	}
}

func TestMaxSessions(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.MaxSessions = 2
	e := f.executor(t, o)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := e.Execute(context.Background(), "sleep 0.05", nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := f.srv.maxRunning.Load(); got > 2 {
		t.Fatalf("%d sessions at once, limit 2", got)
	}
}

func TestReconnectAfterServerDrop(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	mustExec(t, e, "true", nil)

	f.srv.dropAll()
	if out, _ := mustExec(t, e, "echo again", nil); out != "again\n" {
		t.Fatalf("%q", out)
	}
	if got := f.srv.accepted.Load(); got != 2 {
		t.Fatalf("accepted %d, want 2", got)
	}

	// A drop during a command fails that command with an error naming the
	// address; the next call reconnects.
	errc := make(chan error, 1)
	go func() {
		_, _, err := e.Execute(context.Background(), "sleep 30", nil)
		errc <- err
	}()
	for cmd := range f.srv.execStarted {
		if cmd == "sleep 30" {
			break
		}
	}
	f.srv.dropAll()
	err := <-errc
	var xe *runner.ExitError
	if err == nil || errors.As(err, &xe) || !strings.Contains(err.Error(), "ssh "+f.srv.addr+": ") {
		t.Fatalf("dropped command: %v", err)
	}
	if errors.Is(err, runner.ErrNotSent) {
		t.Fatalf("a command dropped while running must not claim it was never sent: %v", err)
	}
	mustExec(t, e, "true", nil)
	if got := f.srv.accepted.Load(); got != 3 {
		t.Fatalf("accepted %d, want 3", got)
	}
}

func TestCommandTimeoutKillsSession(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.CommandTimeout = 200 * time.Millisecond
	e := f.executor(t, o)

	start := time.Now()
	_, _, err := e.Execute(context.Background(), "sleep 30", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if errors.Is(err, runner.ErrNotSent) {
		t.Fatalf("a command that timed out while running must not claim it was never sent: %v", err)
	}
	// Cut, not waited for: well before the command's 30 s, within 5 s on
	// a quiet machine stretched by the load (8.4 s at a load of 47).
	stretch, why := wait.Stretch()
	if d := time.Since(start); d > time.Duration(float64(5*time.Second)*stretch) {
		t.Fatalf("took %v (5s on a quiet machine%s)", d, why)
	}
	if !strings.Contains(err.Error(), f.srv.addr) {
		t.Fatalf("error does not name the address: %v", err)
	}
}

// TestCallLimitOutlastsCommandTimeout: a caller that bounds its calls
// itself for longer (the pool, from timeout_runner_call) is not cut at
// the executor's CommandTimeout: an install of the runner given minutes
// was cut at the default minute. A shorter limit leaves CommandTimeout.
func TestCallLimitOutlastsCommandTimeout(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.CommandTimeout = 200 * time.Millisecond
	// The connection is not what this is about: at a load of 47 the
	// handshake took longer than the default 10 s.
	o.DialTimeout = time.Minute
	e := f.executor(t, o)
	ctx := runner.WithCallLimit(context.Background(), time.Minute)
	if out, _, err := e.Execute(ctx, "sleep 1; echo done", nil); err != nil || strings.TrimSpace(string(out)) != "done" {
		t.Fatalf("a call the caller gave a minute, cut at the executor's 200ms: %q, %v", out, err)
	}
	ctx = runner.WithCallLimit(context.Background(), 50*time.Millisecond)
	if _, _, err := e.Execute(ctx, "sleep 30", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a shorter limit of the caller's: want the executor's own deadline, got %v", err)
	}
}

func TestContextEndsSession(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	mustExec(t, e, "true", nil)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := e.Execute(ctx, "sleep 30", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
	// The connection survives a killed session.
	mustExec(t, e, "true", nil)
	if got := f.srv.accepted.Load(); got != 1 {
		t.Fatalf("accepted %d, want 1", got)
	}

	// Caller cancellation works the same way.
	ctx, cancel = context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := e.Execute(ctx, "sleep 31", nil)
		errc <- err
	}()
	for cmd := range f.srv.execStarted {
		if cmd == "sleep 31" {
			break
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("want Canceled, got %v", err)
	}
	// The server's process is gone once the session is torn down.
	f.srv.waitExited(t, "sleep 31")
}

func TestPinnedHostKey(t *testing.T) {
	f := newFixture(t)
	e := f.executor(t, f.opts())
	mustExec(t, e, "true", nil)

	o := f.opts()
	o.HostKeyCallback = Pinned(newEd25519Signer(t).PublicKey())
	e2 := f.executor(t, o)
	_, _, err := e2.Execute(context.Background(), "true", nil)
	if !errors.Is(err, ErrHostKey) {
		t.Fatalf("want ErrHostKey, got %v", err)
	}
	var he *HostKeyError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("error: %v", err)
	}
}

func TestKnownHosts(t *testing.T) {
	f := newFixture(t)
	key := f.srv.hostKeys[0].PublicKey()

	t.Run("known", func(t *testing.T) {
		p := writeKnownHosts(t, knownhosts.Line([]string{f.srv.addr}, key))
		cb, err := KnownHosts(p)
		if err != nil {
			t.Fatal(err)
		}
		o := f.opts()
		o.HostKeyCallback = cb
		mustExec(t, f.executor(t, o), "true", nil)
	})
	t.Run("changed", func(t *testing.T) {
		p := writeKnownHosts(t, knownhosts.Line([]string{f.srv.addr}, newEd25519Signer(t).PublicKey()))
		cb, err := KnownHosts(p)
		if err != nil {
			t.Fatal(err)
		}
		o := f.opts()
		o.HostKeyCallback = cb
		_, _, err = f.executor(t, o).Execute(context.Background(), "true", nil)
		if !errors.Is(err, ErrHostKey) {
			t.Fatalf("want ErrHostKey, got %v", err)
		}
		msg := err.Error()
		for _, want := range []string{"changed", p, "remove the old key", ssh.FingerprintSHA256(key)} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
	})
	t.Run("unknown", func(t *testing.T) {
		p := writeKnownHosts(t, knownhosts.Line([]string{"127.0.0.1:1"}, key))
		cb, err := KnownHosts(p)
		if err != nil {
			t.Fatal(err)
		}
		o := f.opts()
		o.HostKeyCallback = cb
		_, _, err = f.executor(t, o).Execute(context.Background(), "true", nil)
		if !errors.Is(err, ErrHostKey) {
			t.Fatalf("want ErrHostKey, got %v", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "unknown") || !strings.Contains(msg, p) {
			t.Fatalf("message: %s", msg)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		if _, err := KnownHosts(filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("no error for a missing known_hosts file")
		}
	})
}

// The server holds ecdsa and ed25519 keys but only the ed25519 one is on
// record: the executor must not call that a changed key.
func TestHostKeyTypeNotPreferred(t *testing.T) {
	ed := newEd25519Signer(t)
	f := newFixture(t, newECDSASigner(t), ed)
	p := writeKnownHosts(t, knownhosts.Line([]string{f.srv.addr}, ed.PublicKey()))
	cb, err := KnownHosts(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, cb := range map[string]ssh.HostKeyCallback{"known_hosts": cb, "pinned": Pinned(ed.PublicKey())} {
		t.Run(name, func(t *testing.T) {
			o := f.opts()
			o.HostKeyCallback = cb
			e := f.executor(t, o)
			mustExec(t, e, "true", nil)
			// Reconnects use the learned algorithms straight away.
			before := f.srv.accepted.Load()
			f.srv.dropAll()
			mustExec(t, e, "true", nil)
			if got := f.srv.accepted.Load() - before; got != 1 {
				t.Fatalf("reconnect took %d connections, want 1", got)
			}
		})
	}

	// A server that only has a key of another type is refused.
	f2 := newFixture(t, newECDSASigner(t))
	o := f2.opts()
	o.HostKeyCallback = Pinned(ed.PublicKey())
	_, _, err = f2.executor(t, o).Execute(context.Background(), "true", nil)
	if !errors.Is(err, ErrHostKey) {
		t.Fatalf("want ErrHostKey, got %v", err)
	}
}

func TestSecret(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.srv.dir, ".dispatch-tui-secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	o := f.opts()
	o.Secret = "s3cret"
	e := f.executor(t, o)
	mustExec(t, e, "true", nil)
	mustExec(t, e, "true", nil)
	if got := f.srv.accepted.Load(); got != 1 {
		t.Fatalf("accepted %d", got)
	}
	// Checked again after a reconnect.
	f.srv.dropAll()
	mustExec(t, e, "true", nil)

	o.Secret = "other"
	bad := f.executor(t, o)
	before := f.srv.accepted.Load()
	for range 2 {
		_, _, err := bad.Execute(context.Background(), "touch ran", nil)
		if !errors.Is(err, ErrSecretMismatch) {
			t.Fatalf("want ErrSecretMismatch, got %v", err)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "other") {
			t.Fatalf("error leaks a secret: %v", err)
		}
	}
	if got := f.srv.accepted.Load() - before; got != 2 {
		t.Fatalf("mismatch should drop the connection: %d connections for 2 calls", got)
	}
	if _, err := os.Stat(filepath.Join(f.srv.dir, "ran")); err == nil {
		t.Fatal("command ran despite the secret mismatch")
	}

	// A missing secret file is a mismatch; the command is configurable.
	o.Secret = "s3cret"
	o.SecretCommand = "cat no-such-file"
	_, _, err := f.executor(t, o).Execute(context.Background(), "true", nil)
	if !errors.Is(err, ErrSecretMismatch) {
		t.Fatalf("want ErrSecretMismatch, got %v", err)
	}
}

func TestClose(t *testing.T) {
	f := newFixture(t)
	e := New(f.opts())
	mustExec(t, e, "true", nil)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Execute(context.Background(), "true", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// silentListener accepts TCP connections and never speaks SSH.
func silentListener(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acc := make(chan struct{}, 10)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			acc <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), acc
}

func TestDialTimeout(t *testing.T) {
	addr, _ := silentListener(t)
	e := New(Options{Address: addr, User: "u", Signer: newEd25519Signer(t),
		HostKeyCallback: Pinned(newEd25519Signer(t).PublicKey()), DialTimeout: 200 * time.Millisecond})
	defer e.Close()
	start := time.Now()
	_, _, err := e.Execute(context.Background(), "true", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if !errors.Is(err, runner.ErrNotSent) {
		t.Fatalf("a failed dial must say the command was not sent: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestCloseAbortsDial(t *testing.T) {
	addr, accepted := silentListener(t)
	e := New(Options{Address: addr, User: "u", Signer: newEd25519Signer(t),
		HostKeyCallback: Pinned(newEd25519Signer(t).PublicKey())})
	errc := make(chan error, 1)
	go func() {
		_, _, err := e.Execute(context.Background(), "true", nil)
		errc <- err
	}()
	<-accepted
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
}

func TestOptionsValidated(t *testing.T) {
	f := newFixture(t)
	o := f.opts()
	o.HostKeyCallback = nil
	_, _, err := f.executor(t, o).Execute(context.Background(), "true", nil)
	if err == nil || !strings.Contains(err.Error(), "HostKeyCallback") {
		t.Fatalf("got %v", err)
	}
	if n := f.srv.accepted.Load(); n != 0 {
		t.Fatalf("dialed without a host key policy")
	}
}

// freezeProxy forwards TCP to target and can stop forwarding without
// closing anything, like a network that silently drops packets.
type freezeProxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int32

	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(c, u)
			go p.pipe(u, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.setFrozen(false)
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *freezeProxy) setFrozen(v bool) {
	p.mu.Lock()
	p.frozen = v
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *freezeProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A connection that stops answering is abandoned once a command times out,
// and the next call dials a new one.
func TestHungConnectionIsDropped(t *testing.T) {
	f := newFixture(t)
	p := newFreezeProxy(t, f.srv.addr)
	o := f.opts()
	o.Address = p.ln.Addr().String()
	o.HostKeyCallback = Pinned(f.srv.hostKeys[0].PublicKey())
	e := f.executor(t, o)
	e.killGrace = 100 * time.Millisecond
	mustExec(t, e, "true", nil)

	p.setFrozen(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := e.Execute(ctx, "true", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
	p.setFrozen(false)
	if out, _ := mustExec(t, e, "echo back", nil); out != "back\n" {
		t.Fatalf("%q", out)
	}
	if got := p.accepted.Load(); got != 2 {
		t.Fatalf("proxy accepted %d connections, want 2", got)
	}
}

// connected reports whether e holds an open connection.
func (e *Executor) connected() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client != nil
}

// A connection that stops answering while idle (a network cut: nothing is
// closed) is found by the keepalive within interval+timeout and dropped,
// and the first call after the cut heals dials a new one.
func TestKeepaliveDropsDeadConnection(t *testing.T) {
	f := newFixture(t)
	p := newFreezeProxy(t, f.srv.addr)
	o := f.opts()
	o.Address = p.ln.Addr().String()
	// A reply may take a second on a loaded machine: at 100 ms the
	// healthy connection was dropped under the first command (load 30).
	o.KeepaliveInterval = 100 * time.Millisecond
	o.KeepaliveTimeout = 2 * time.Second
	e := f.executor(t, o)
	mustExec(t, e, "true", nil)

	// Keepalives are answered (with a refusal, as sshd does): the
	// connection stays up across several rounds.
	wait.Until(t, "three keepalives answered", 10*time.Second, func() bool { return f.srv.keepalives.Load() >= 3 })
	if !e.connected() {
		t.Fatal("a healthy connection was dropped by the keepalive")
	}

	p.setFrozen(true)
	cut := time.Now()
	wait.Until(t, "the dead connection to be dropped", 10*time.Second, func() bool { return !e.connected() })
	// Generous bound for a loaded machine, still far below the 60s a
	// command timeout would take.
	if d, bound := time.Since(cut), o.KeepaliveInterval+o.KeepaliveTimeout; d > 3*bound+time.Second {
		t.Fatalf("dead connection dropped after %v, want about %v", d, bound)
	}

	p.setFrozen(false)
	if out, _ := mustExec(t, e, "echo healed", nil); out != "healed\n" {
		t.Fatalf("%q", out)
	}
	if got := p.accepted.Load(); got != 2 {
		t.Fatalf("proxy accepted %d connections, want 2 (a redial after the heal)", got)
	}
}
