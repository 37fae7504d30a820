// The route table: every endpoint with the least role that may call it.

package api

import "net/http"

// route is one endpoint and the least role that may call it.
type route struct {
	pattern string
	role    Role
	handler http.Handler
}

// routes lists every endpoint of the API. Reading needs a viewer, anything
// that changes the dispatcher an operator; a route must name its role
// (TestEveryRouteHasARole checks each one).
func (s *server) routes(metrics http.Handler) []route {
	rs := []route{
		{"GET /healthz", rolePublic, http.HandlerFunc(healthz)},
		{"GET /v1/instances", RoleViewer, http.HandlerFunc(s.listInstances)},
		{"POST /v1/instances/{id}/{verb}", RoleOperator, http.HandlerFunc(s.instanceVerb)},
		{"GET /v1/containers", RoleViewer, http.HandlerFunc(s.listContainers)},
		{"POST /v1/containers", RoleOperator, http.HandlerFunc(s.submit)},
		{"GET /v1/containers/{id}", RoleViewer, http.HandlerFunc(s.getContainer)},
		{"PATCH /v1/containers/{id}", RoleOperator, http.HandlerFunc(s.patchContainer)},
		{"POST /v1/containers/bulk", RoleOperator, http.HandlerFunc(s.bulk)},
		{"POST /v1/containers/{id}/{verb}", RoleOperator, http.HandlerFunc(s.containerVerb)},
		{"GET /v1/containers/{id}/logs", RoleViewer, http.HandlerFunc(s.logs)},
		{"GET /v1/types", RoleViewer, http.HandlerFunc(s.types)},
		{"GET /v1/events", RoleViewer, http.HandlerFunc(s.events)},
		{"GET /v1/summary", RoleViewer, http.HandlerFunc(s.summary)},
		{"GET /v1/cost", RoleViewer, http.HandlerFunc(s.cost)},
		{"POST /v1/scheduler/{verb}", RoleOperator, http.HandlerFunc(s.schedulerVerb)},
		{"GET /v1/whoami", RoleViewer, http.HandlerFunc(whoami)},
		{"GET /v1/cluster", RoleViewer, http.HandlerFunc(s.cluster)},
	}
	if metrics != nil {
		rs = append(rs, route{"GET /metrics", RoleViewer, metrics})
	}
	return rs
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok"))
}

// Identity is the answer to GET /v1/whoami: who the server takes the
// client for, and what it may do.
type Identity struct {
	Actor string `json:"actor"`
	Role  string `json:"role"`
}

func whoami(w http.ResponseWriter, r *http.Request) {
	id := Identity{Actor: actor(r), Role: RoleOperator.String()}
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		id.Role = p.role.String()
	}
	writeJSON(w, http.StatusOK, id)
}
