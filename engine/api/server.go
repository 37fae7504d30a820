// Package api is the dispatcher's management HTTP API (docs/design.md §7.2): a
// server over an *engine.Engine and a Go client for it (the TUI's remote
// backend and the CLI use the client).
package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"dispatch-tui/engine"
)

// MaxBodyBytes caps every request body; larger bodies get 413.
const MaxBodyBytes = 1 << 20

// ActorHeader carries the name of whoever drives a client (e.g.
// "cli:alice"); the server records verbs as "api:" + its sanitised value.
const ActorHeader = "X-Dispatch-Actor"

// maxActorLen caps the sanitised actor header.
const maxActorLen = 64

// ServerOptions configure NewServer.
type ServerOptions struct {
	Engine *engine.Engine
	// Token is the bearer token every /v1 request must carry. "" disables
	// authentication (only sensible on loopback: see CheckListen).
	Token string
	// Metrics, when non-nil, is served at GET /metrics without auth.
	Metrics http.Handler
	// Logger receives one debug line per request; nil discards.
	Logger *slog.Logger
}

type server struct {
	eng      *engine.Engine
	log      *slog.Logger
	mux      *http.ServeMux
	hasToken bool
	token    [sha256.Size]byte

	followPoll time.Duration // how often a followed container's output is read again
	// followWaiting, when set, is called each time a follow stream has
	// written what there is and waits for the next poll: tests use it to
	// know a stream is under way.
	followWaiting func()
}

// NewServer returns the API handler.
func NewServer(opts ServerOptions) http.Handler {
	s := &server{eng: opts.Engine, log: opts.Logger, mux: http.NewServeMux(), followPoll: defaultFollowPoll}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Token != "" {
		s.hasToken = true
		s.token = sha256.Sum256([]byte(opts.Token))
	}
	m := s.mux
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok"))
	})
	if opts.Metrics != nil {
		m.Handle("GET /metrics", opts.Metrics)
	}
	m.HandleFunc("GET /v1/instances", s.listInstances)
	m.HandleFunc("POST /v1/instances/{id}/{verb}", s.instanceVerb)
	m.HandleFunc("GET /v1/containers", s.listContainers)
	m.HandleFunc("POST /v1/containers", s.submit)
	m.HandleFunc("GET /v1/containers/{id}", s.getContainer)
	m.HandleFunc("PATCH /v1/containers/{id}", s.patchContainer)
	m.HandleFunc("POST /v1/containers/{id}/{verb}", s.containerVerb)
	m.HandleFunc("GET /v1/containers/{id}/logs", s.logs)
	m.HandleFunc("GET /v1/types", s.types)
	m.HandleFunc("GET /v1/events", s.events)
	m.HandleFunc("GET /v1/summary", s.summary)
	m.HandleFunc("POST /v1/scheduler/{verb}", s.schedulerVerb)
	return s
}

// public reports whether a path is served without authentication.
func public(path string) bool { return path == "/healthz" || path == "/metrics" }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	defer func() {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "api request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status()), slog.Duration("duration", time.Since(start)),
			slog.String("remote", r.RemoteAddr))
	}()
	if s.hasToken && !public(r.URL.Path) && !s.authorize(rec, r) {
		return
	}
	h, pattern := s.mux.Handler(r)
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
	s.mux.ServeHTTP(rec, r)
}

// authorize checks the bearer token: none → 401, wrong → 403.
func (s *server) authorize(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(auth, " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dispatch-tui"`)
		writeError(w, &httpError{status: http.StatusUnauthorized, msg: "authentication required: send Authorization: Bearer <token>"})
		return false
	}
	got := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(got[:], s.token[:]) != 1 {
		writeError(w, &httpError{status: http.StatusForbidden, msg: "invalid token"})
		return false
	}
	return true
}

// actor names who performs a verb: "api", or "api:" + the sanitised
// X-Dispatch-Actor header.
func actor(r *http.Request) string {
	v := sanitizeActor(r.Header.Get(ActorHeader))
	if v == "" {
		return "api"
	}
	return "api:" + v
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
