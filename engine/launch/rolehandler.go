// The API of a node of a cluster: the leader's engine while it leads; a
// standby's server otherwise, which answers its health, metrics and view
// of the cluster itself and forwards the rest to the leader (docs/design.md
// §11).

package launch

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/metrics"
)

// roleHandler serves the API of the node's current role. lead and standBy
// switch it; requests in flight finish on the handler they began on.
type roleHandler struct {
	auth       apiAuth
	metrics    *metrics.Metrics
	log        *slog.Logger
	peerSecret string
	// newMembers makes the node's membership once the API's certificate
	// is known (build): its fingerprint is beaten for the standbys to pin.
	newMembers func(fingerprint string) *ha.Members
	members    *ha.Members
	// forward carries a standby's requests to the leader: one transport
	// for every term, so its connections are reused, not left per term.
	forward http.RoundTripper
	standby http.Handler
	cur     atomic.Pointer[http.Handler]
}

func newRoleHandler(newMembers func(string) *ha.Members, peerSecret string, m *metrics.Metrics, log *slog.Logger) *roleHandler {
	return &roleHandler{newMembers: newMembers, peerSecret: peerSecret, metrics: m, log: log}
}

// build is serveWith's newHandler: it learns who may use the API and the
// certificate's fingerprint, and starts standing by.
func (h *roleHandler) build(auth apiAuth) http.Handler {
	h.auth = auth
	h.members = h.newMembers(auth.fingerprint)
	h.forward = api.PeerTransport(h.members.LeaderFingerprint)
	h.standby = h.server(nil, standingBy{h.members})
	h.standBy()
	return h
}

func (h *roleHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*h.cur.Load()).ServeHTTP(w, r)
}

// server is the API over e (nil: standing by, with no engine to serve),
// as c says per request: a node that does not lead forwards every request
// it does not answer itself.
func (h *roleHandler) server(e *engine.Engine, c api.Cluster) http.Handler {
	return api.NewServer(api.ServerOptions{
		Engine: e, Tokens: h.auth.tokens, SocketPeer: h.auth.socketPeer, Metrics: h.metrics.Handler(), Logger: h.log,
		Cluster: c, PeerSecret: h.peerSecret, Forward: h.forward,
	})
}

// lead serves e's API; it forwards once the node no longer leads, before
// standBy.
func (h *roleHandler) lead(e *engine.Engine) {
	s := h.server(e, h.members)
	h.cur.Store(&s)
}

// standingBy is the membership as the server without an engine sees it:
// never leading, even between winning the lease and opening the term's
// engine (a request then forwarded to this node itself is answered 503,
// "retry in a few seconds").
type standingBy struct{ *ha.Members }

func (standingBy) Leading() bool { return false }

// standBy serves the standby's API.
func (h *roleHandler) standBy() { h.cur.Store(&h.standby) }
