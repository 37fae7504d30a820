// The API of a node of a cluster: the leader's engine while it leads, a
// standby's answer otherwise (docs/design.md §11).

package launch

import (
	"encoding/json"
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
	auth    apiAuth
	roles   ha.Roles
	metrics *metrics.Metrics
	log     *slog.Logger
	standby http.Handler
	cur     atomic.Pointer[http.Handler]
}

func newRoleHandler(roles ha.Roles, m *metrics.Metrics, log *slog.Logger) *roleHandler {
	return &roleHandler{roles: roles, metrics: m, log: log}
}

// build is serveWith's newHandler: it learns who may use the API and
// starts standing by.
func (h *roleHandler) build(auth apiAuth) http.Handler {
	h.auth = auth
	h.standby = h.newStandby()
	h.standBy()
	return h
}

func (h *roleHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*h.cur.Load()).ServeHTTP(w, r)
}

// lead serves e's API.
func (h *roleHandler) lead(e *engine.Engine) {
	var s http.Handler = api.NewServer(api.ServerOptions{
		Engine: e, Tokens: h.auth.tokens, SocketPeer: h.auth.socketPeer, Metrics: h.metrics.Handler(), Logger: h.log,
	})
	h.cur.Store(&s)
}

// standBy serves the standby's answer.
func (h *roleHandler) standBy() { h.cur.Store(&h.standby) }

// newStandby answers /metrics (authenticated as usual: the node's
// leadership metrics) and refuses every other request with 503, naming
// the leader to connect to.
func (h *roleHandler) newStandby() http.Handler {
	metricsOnly := api.NewServer(api.ServerOptions{
		Tokens: h.auth.tokens, SocketPeer: h.auth.socketPeer, Metrics: h.metrics.Handler(), Logger: h.log,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			metricsOnly.ServeHTTP(w, r)
			return
		}
		_, _, leader := h.roles.Role()
		msg := "this node stands by and no node leads yet: retry in a few seconds"
		if leader.Valid && leader.Node != "" {
			msg = "this node stands by: the leader is node " + leader.Node + " at " + leader.Address + "; connect there"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": msg})
	})
}
