// Serving the API on the socket and on TCP, with its timeouts and tokens.

package launch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
)

// Timeouts bound how long an API client may hold a connection without
// making progress.
type Timeouts struct {
	ReadHeader time.Duration // to send the request line and headers
	Read       time.Duration // to send the whole request, body included
	Idle       time.Duration // between requests on a kept-alive connection
}

// DefaultTimeouts are the API server's timeouts unless Options says
// otherwise. A request body is at most api.MaxBodyBytes, which any client
// sends well within Read.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Idle: 2 * time.Minute}

// Serve starts the management API (and /metrics) on the unix socket in the
// state dir and, when dispatcher.listen is set, on TCP (with TLS off
// loopback). It refuses a TCP listener without a token, and plain HTTP
// off loopback. The returned function stops accepting and waits for
// requests in flight (bounded by ctx).
func Serve(r *Running, opts Options) (stop func(context.Context) error, err error) {
	return serveWith(opts, func(auth apiAuth) http.Handler {
		return api.NewServer(api.ServerOptions{
			Engine: r.Engine, Tokens: auth.tokens, SocketPeer: auth.socketPeer, Metrics: r.Metrics.Handler(), Logger: opts.Logger,
			// A dispatcher alone; a node of a cluster serves through
			// its roleHandler (docs/design.md §11).
			Cluster: api.SingleNode(opts.Config.HA.NodeName, opts.Config.HA.Advertise),
		})
	})
}

// apiAuth is who may use the API: what every handler serving it needs;
// and the fingerprint of the TCP listener's certificate ("" without TLS).
type apiAuth struct {
	tokens      []api.Token
	socketPeer  func(api.Peer) bool
	fingerprint string
}

// serveWith is Serve with the handler newHandler builds.
func serveWith(opts Options, newHandler func(apiAuth) http.Handler) (stop func(context.Context) error, err error) {
	cfg := opts.Config
	d := &cfg.Dispatcher
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeouts := DefaultTimeouts
	if opts.Timeouts != nil {
		timeouts = *opts.Timeouts
	}
	if err := prepareStateDir(d); err != nil {
		return nil, err
	}
	tokens, err := apiTokens(d.APITokens())
	if err != nil {
		return nil, err
	}
	socketPeer, err := socketPolicy(d.SocketGroup)
	if err != nil {
		return nil, err
	}
	// TCP listens before the handler is built: a node of a cluster beats
	// its certificate's fingerprint for the standbys to pin (§11).
	var tcp net.Listener
	fingerprint := ""
	if d.Listen != "" {
		if tcp, fingerprint, err = listenTCP(d); err != nil {
			return nil, err
		}
	}
	handler := newHandler(apiAuth{tokens: tokens, socketPeer: socketPeer, fingerprint: fingerprint})

	// Requests run under baseCtx, cancelled on stop, so a long
	// "logs --follow" does not hold the daemon's shutdown.
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	newServer := func(connCtx func(context.Context, net.Conn) context.Context) *http.Server {
		return &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: timeouts.ReadHeader,
			ReadTimeout:       timeouts.Read,
			IdleTimeout:       timeouts.Idle,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return baseCtx },
			ConnContext:       connCtx,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		}
	}
	var servers []*http.Server
	stopAll := func(ctx context.Context) error {
		cancelRequests()
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Shutdown(ctx))
		}
		return errors.Join(errs...)
	}
	serve := func(s *http.Server, ln net.Listener) {
		servers = append(servers, s)
		go func() {
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("api server", "err", err.Error())
			}
		}()
	}

	sock, err := listenSocket(d)
	if err != nil {
		cancelRequests()
		if tcp != nil {
			tcp.Close()
		}
		return nil, err
	}
	serve(newServer(api.PeerContext), limitListen(sock, d.MaxConnections))
	log.Info("api listening", "socket", d.SocketPath(), "group", d.SocketGroup)

	if tcp != nil {
		ln := tcp
		// One client address may hold only a share of the slots waiting
		// for a request (addrgate.go). The socket needs no gate: its file
		// mode admits only this user (and socket_group).
		gate := newAddrGate(waitingPerAddress(d.MaxConnections), log)
		s := newServer(nil)
		s.ConnState = gate.track
		serve(s, gate.listen(limitListen(ln, d.MaxConnections)))
		attrs := []any{"addr", ln.Addr().String(), "tokens", len(tokens), "tls", fingerprint != ""}
		if fingerprint != "" {
			attrs = append(attrs, "tls_fingerprint", fingerprint)
		}
		log.Info("api listening", attrs...)
	}
	return stopAll, nil
}

// apiTokens converts the configured tokens for the API server.
func apiTokens(ts []config.APIToken) ([]api.Token, error) {
	out := make([]api.Token, 0, len(ts))
	for _, t := range ts {
		role, err := api.ParseRole(t.Role)
		if err != nil {
			return nil, fmt.Errorf("token %s: %w", t.Name, err)
		}
		out = append(out, api.Token{Name: t.Name, Role: role, Secret: t.Token})
	}
	return out, nil
}

// socketPolicy accepts socket peers running as this user or root, and with
// a socket group, that group's members. The socket's file mode already
// keeps everyone else out; this holds should the mode be loosened.
func socketPolicy(group string) (func(api.Peer) bool, error) {
	self := uint32(os.Geteuid())
	gid := -1
	if group != "" {
		var err error
		if gid, err = groupID(group); err != nil {
			return nil, err
		}
	}
	return func(p api.Peer) bool {
		return p.UID == self || p.UID == 0 || gid >= 0 && inGroup(p.UID, p.GID, gid)
	}, nil
}

// maxSocketPath is the longest path a Unix socket may have on Linux
// (sun_path's 108 bytes less the terminating NUL).
const maxSocketPath = 107

// listenSocket listens on the state dir's socket, 0600 (0660 with its
// group). A socket left by a dispatcher that died is replaced; one that
// answers belongs to a running dispatcher and is an error.
func listenSocket(d *config.Dispatcher) (net.Listener, error) {
	path := d.SocketPath()
	// The kernel's limit would otherwise surface as a bare "invalid
	// argument" from the bind.
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("the API socket %s is %d bytes long, and a Unix socket's path may have at most %d: choose a shorter dispatcher.state_dir (or XDG_STATE_HOME)", path, len(path), maxSocketPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another dispatcher is serving on %s (same state_dir)", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Only the file mode guards the socket; the state dir around it is
	// private already, so the moment before chmod exposes nothing.
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	mode := os.FileMode(0o600)
	if d.SocketGroup != "" {
		gid, err := groupID(d.SocketGroup)
		if err == nil {
			err = os.Chown(path, -1, gid)
		}
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("give %s to group %s: %w", path, d.SocketGroup, err)
		}
		mode = 0o660
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return ln, nil
}

// listenTCP listens on dispatcher.listen, with TLS when configured or off
// loopback; it returns the certificate's fingerprint when TLS is on.
func listenTCP(d *config.Dispatcher) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(d.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("dispatcher.listen %q: %w", d.Listen, err)
	}
	useTLS := d.TLS == "on" || d.TLS == "auto" && !api.IsLoopback(host)
	if err := api.CheckListen(d.Listen, len(d.APITokens()), useTLS); err != nil {
		return nil, "", err
	}
	var tlsConf *tls.Config
	fingerprint := ""
	if useTLS {
		cert, err := loadCertificate(d.TLSCert, d.TLSKey, d.StateDir, host)
		if err != nil {
			return nil, "", err
		}
		fingerprint = api.Fingerprint(cert.Certificate[0])
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", d.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s (dispatcher.listen): %w", d.Listen, err)
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	return ln, fingerprint, nil
}
