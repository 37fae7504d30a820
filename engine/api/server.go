// Package api is the dispatcher's management HTTP API (docs/design.md §7.2): a
// server over an *engine.Engine and a Go client for it (the TUI's remote
// backend and the CLI use the client).
package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"dispatch-tui/engine"
)

// MaxBodyBytes caps every request body; larger bodies get 413.
const MaxBodyBytes = 1 << 20

// ActorHeader carries the name of whoever drives a client (e.g.
// "cli:alice"). An authenticated request is recorded as its socket peer or
// token; only a server without tokens records "api:" + the header's
// sanitised value.
const ActorHeader = "X-Dispatch-Actor"

// maxActorLen caps the sanitised actor header.
const maxActorLen = 64

// ServerOptions configure NewServer.
type ServerOptions struct {
	Engine *engine.Engine
	// Token, when set, is an operator token named "default" (kept for
	// callers that know one token).
	Token string
	// Tokens are the named bearer tokens TCP clients may present. With
	// neither Token nor Tokens, requests without a socket peer are not
	// authenticated at all: only tests serve so.
	Tokens []Token
	// SocketPeer, when set, decides whether a unix socket peer may use the
	// API (an accepted peer is an operator); nil accepts every peer, the
	// socket's file mode being the boundary.
	SocketPeer func(Peer) bool
	// Metrics, when non-nil, is served at GET /metrics (viewer role).
	Metrics http.Handler
	// Logger receives one debug line per request; nil discards.
	Logger *slog.Logger
	// Cluster is this node's membership of a cluster of dispatchers
	// (docs/design.md §11): a standby forwards requests to the leader.
	// nil: a dispatcher alone (SingleNode named "local").
	Cluster Cluster
	// PeerSecret is the cluster's shared secret: a standby presents it
	// with each forwarded request, and a request presenting it may name
	// the caller it was forwarded for. "" without a cluster.
	PeerSecret string
	// Forward carries forwarded requests to the leader (PeerTransport
	// for https nodes); nil: http.DefaultTransport.
	Forward http.RoundTripper
}

type server struct {
	eng        *engine.Engine
	log        *slog.Logger
	mux        *http.ServeMux
	tokens     []hashedToken
	socketPeer func(Peer) bool
	clusterOf  Cluster
	peerSecret string
	peerHash   [sha256.Size]byte
	forwardVia http.RoundTripper
	// roles maps each registered pattern to the least role it needs.
	roles map[string]Role

	followPoll time.Duration // how often a followed container's output is read again
	// followWaiting, when set, is called each time a follow stream has
	// written what there is and waits for the next poll: tests use it to
	// know a stream is under way.
	followWaiting func()
}

// NewServer returns the API handler.
func NewServer(opts ServerOptions) http.Handler {
	s := &server{
		eng: opts.Engine, log: opts.Logger, mux: http.NewServeMux(), followPoll: defaultFollowPoll,
		socketPeer: opts.SocketPeer, roles: map[string]Role{},
		clusterOf: opts.Cluster, peerSecret: opts.PeerSecret, peerHash: sha256.Sum256([]byte(opts.PeerSecret)), forwardVia: opts.Forward,
	}
	if s.clusterOf == nil {
		s.clusterOf = SingleNode("local", "")
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	tokens := opts.Tokens
	if opts.Token != "" {
		tokens = append([]Token{{Name: "default", Role: RoleOperator, Secret: opts.Token}}, tokens...)
	}
	for _, t := range tokens {
		s.tokens = append(s.tokens, hashedToken{name: t.Name, role: t.Role, hash: sha256.Sum256([]byte(t.Secret))})
	}
	for _, rt := range s.routes(opts.Metrics) {
		s.mux.Handle(rt.pattern, rt.handler)
		s.roles[rt.pattern] = rt.role
	}
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	who := "-"
	defer func() {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "api request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status()), slog.Duration("duration", time.Since(start)),
			slog.String("remote", r.RemoteAddr), slog.String("actor", who))
	}()
	h, pattern := s.mux.Handler(r)
	need, registered := s.roles[pattern]
	var p principal
	if need != rolePublic {
		var ok bool
		p, ok = s.authenticate(rec, r)
		if !ok {
			return
		}
		who = p.actor
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		if registered && (need == roleUnset || p.role < need) {
			writeError(rec, &httpError{status: http.StatusForbidden, msg: fmt.Sprintf(
				"%s has the %s role: %s %s needs the %s role", p.actor, p.role, r.Method, r.URL.Path, need)})
			return
		}
	}
	if pattern == "" {
		// Not found, method not allowed, or a path-cleaning redirect: find
		// out which without writing, and answer 404/405 in JSON.
		probe := &probeWriter{header: http.Header{}}
		h.ServeHTTP(probe, r)
		switch probe.code {
		case http.StatusNotFound:
			writeError(rec, &httpError{status: http.StatusNotFound, msg: "no such endpoint: " + r.Method + " " + r.URL.Path})
			return
		case http.StatusMethodNotAllowed:
			rec.Header().Set("Allow", probe.header.Get("Allow"))
			writeError(rec, &httpError{status: http.StatusMethodNotAllowed, msg: "method " + r.Method + " not allowed on " + r.URL.Path})
			return
		}
	}
	if pattern != "" && !hereRoutes[pattern] && !s.clusterOf.Leading() {
		s.forward(rec, r, p)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// sanitizeActor keeps [A-Za-z0-9_.@:-] (':' so that "cli:alice" survives),
// replaces anything else with '_', and caps the result at 64 bytes.
func sanitizeActor(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= maxActorLen {
			break
		}
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '.', c == '@', c == '-', c == ':':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// recorder remembers the status for the request log. It forwards Flush
// and exposes the underlying writer for http.ResponseController.
type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// probeWriter records what the mux's own not-found / not-allowed handlers
// would answer, writing nothing.
type probeWriter struct {
	header http.Header
	code   int
}

func (p *probeWriter) Header() http.Header { return p.header }
func (p *probeWriter) WriteHeader(code int) {
	if p.code == 0 {
		p.code = code
	}
}
func (p *probeWriter) Write(b []byte) (int, error) {
	if p.code == 0 {
		p.code = http.StatusOK
	}
	return len(b), nil
}
