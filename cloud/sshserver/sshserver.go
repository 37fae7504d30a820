//go:build unix

// Package sshserver is a small in-process SSH server for simulated
// instances (the local driver's sandboxes, the EC2 test endpoint's
// instances): it accepts only the given client keys, runs each session's
// "exec" under /bin/sh -c in a home directory, forwards signals to the
// command's process group and kills what still runs when it closes.
package sshserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

const (
	handshakeTimeout = 10 * time.Second
	// outputWaitDelay bounds how long a session waits, after its command
	// exits, for descendants still holding stdout/stderr open.
	outputWaitDelay = 2 * time.Second
)

// Config configures a Server.
type Config struct {
	// Listen is the TCP address to listen on; "" = "127.0.0.1:0".
	Listen  string
	HostKey ssh.Signer
	// ClientKeys are the only client keys accepted.
	ClientKeys []ssh.PublicKey
	// ReadyAt: connections before this time are closed at once (booting).
	ReadyAt time.Time
	// Home is the sessions' working directory and $HOME.
	Home string
	// Env is added to every session's environment (after PATH and HOME).
	Env []string
	// Logger may be nil.
	Logger *slog.Logger
}

// Server is one instance's SSH server.
type Server struct {
	cfg    Config
	sshCfg *ssh.ServerConfig
	ln     net.Listener

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	pgids  map[int]struct{} // process groups of running session commands
	wg     sync.WaitGroup
}

// Start listens on cfg.Listen and serves until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, len(cfg.ClientKeys))
	for i, k := range cfg.ClientKeys {
		keys[i] = k.Marshal()
	}
	s := &Server{
		cfg:   cfg,
		ln:    ln,
		conns: make(map[net.Conn]struct{}),
		pgids: make(map[int]struct{}),
	}
	s.sshCfg = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range keys {
				if bytes.Equal(key.Marshal(), k) {
					return &ssh.Permissions{}, nil
				}
			}
			return nil, errors.New("unknown public key")
		},
	}
	s.sshCfg.AddHostKey(cfg.HostKey)
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr is where the server listens ("host:port").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection, kills the process groups
// of session commands still running and waits for all handlers.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return
	}
	s.closed = true
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	for pgid := range s.pgids {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if time.Now().Before(s.cfg.ReadyAt) {
			c.Close() // still booting
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

func (s *Server) serveConn(c net.Conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.sshCfg)
	if err != nil {
		s.cfg.Logger.Debug("sshserver: handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	c.SetDeadline(time.Time{})
	defer sc.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		ssh.DiscardRequests(reqs)
	}()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only session channels are supported")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveSession(ch, creqs)
		}()
	}
}

type envRequest struct{ Name, Value string }
type execRequest struct{ Command string }
type signalRequest struct{ Signal string }
type exitStatus struct{ Status uint32 }
type exitSignal struct {
	Signal     string
	CoreDumped bool
	Error      string
	Lang       string
}

var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL,
	"TERM": syscall.SIGTERM, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2, "ALRM": syscall.SIGALRM, "PIPE": syscall.SIGPIPE,
}

// serveSession handles one session channel: "env" requests, then one
// "exec", whose command runs under /bin/sh -c in the instance's home, or
// a "pty-req" and a "shell" (pty.go).
func (s *Server) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	var pty *ptyRequest
	var done chan struct{} // closed once the command has finished
	var pgid int
	for {
		var req *ssh.Request
		var ok bool
		if done != nil {
			select {
			case req, ok = <-reqs:
			case <-done:
				// The command finished and the channel is closed; drain
				// what the client may still send.
				go ssh.DiscardRequests(reqs)
				return
			}
		} else {
			req, ok = <-reqs
		}
		if !ok {
			// The client closed the channel: a command still running
			// has lost its session.
			if done != nil {
				s.killGroup(pgid)
				<-done
			}
			return
		}
		switch req.Type {
		case "env":
			var e envRequest
			if err := ssh.Unmarshal(req.Payload, &e); err != nil || done != nil {
				req.Reply(false, nil)
				continue
			}
			env = append(env, e.Name+"="+e.Value)
			req.Reply(true, nil)
		case "exec":
			var e execRequest
			if err := ssh.Unmarshal(req.Payload, &e); err != nil || done != nil {
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			done = make(chan struct{})
			pgid = s.startCommand(ch, e.Command, env, done)
		case "pty-req":
			var pr ptyRequest
			if err := ssh.Unmarshal(req.Payload, &pr); err != nil || done != nil {
				req.Reply(false, nil)
				continue
			}
			pty = &pr
			req.Reply(true, nil)
		case "shell":
			if pty == nil || done != nil { // a shell without a terminal: nothing here needs one
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			done = make(chan struct{})
			pgid = s.startShell(ch, *pty, env, done)
		case "signal":
			var sg signalRequest
			var sig syscall.Signal
			known := false
			if err := ssh.Unmarshal(req.Payload, &sg); err == nil {
				sig, known = signals[sg.Signal]
			}
			if done != nil && pgid > 0 && known {
				s.signalGroup(pgid, sig)
			}
			if req.WantReply {
				req.Reply(known, nil)
			}
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
}

// startCommand starts cmdline for the session; done is closed once it has
// finished and its exit status was sent. It returns the command's process
// group (0 if it did not start).
func (s *Server) startCommand(ch ssh.Channel, cmdline string, env []string, done chan struct{}) int {
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Dir = s.cfg.Home
	cmd.Env = append(append(env,
		"PATH="+os.Getenv("PATH"),
		"HOME="+s.cfg.Home,
	), s.cfg.Env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputWaitDelay
	stdin, err := cmd.StdinPipe()
	if err == nil {
		s.mu.Lock()
		if s.closed {
			err = errors.New("server closed")
		} else {
			err = cmd.Start()
			if err == nil {
				s.pgids[cmd.Process.Pid] = struct{}{}
			}
		}
		s.mu.Unlock()
	}
	if err != nil {
		if stdin != nil {
			stdin.Close()
		}
		fmt.Fprintf(ch.Stderr(), "dispatch-tui sshserver: cannot run command: %v\n", err)
		finish(ch, exitStatusPayload(127))
		close(done)
		return 0
	}
	pid := cmd.Process.Pid
	go func() {
		io.Copy(stdin, ch)
		stdin.Close()
	}()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		delete(s.pgids, pid)
		s.mu.Unlock()
		stdin.Close()
		typ, payload := "exit-status", exitStatusPayload(0)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				typ, payload = "exit-signal", ssh.Marshal(exitSignal{Signal: signalName(ws.Signal()), CoreDumped: ws.CoreDump()})
			} else {
				payload = exitStatusPayload(ee.ExitCode())
			}
		} else if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			payload = exitStatusPayload(255)
		}
		ch.CloseWrite()
		ch.SendRequest(typ, false, payload)
		ch.Close()
		close(done)
	}()
	return pid
}

func finish(ch ssh.Channel, status []byte) {
	ch.CloseWrite()
	ch.SendRequest("exit-status", false, status)
	ch.Close()
}

func exitStatusPayload(code int) []byte {
	return ssh.Marshal(exitStatus{Status: uint32(code)})
}

func signalName(sig syscall.Signal) string {
	for name, s := range signals {
		if s == sig {
			return name
		}
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

func (s *Server) killGroup(pgid int) { s.signalGroup(pgid, syscall.SIGKILL) }

// signalGroup signals pgid if it is still one of this server's running
// session commands (so a reaped pid is never signalled).
func (s *Server) signalGroup(pgid int, sig syscall.Signal) {
	if pgid <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pgids[pgid]; ok {
		syscall.Kill(-pgid, sig)
	}
}
