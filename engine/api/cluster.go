// This node's place in a cluster of dispatchers (docs/design.md §11): GET
// /v1/cluster, answered by every node itself, and what a standby needs to
// forward the rest.

package api

import (
	"context"
	"net/http"
	"time"

	"dispatch-tui/engine/view"
)

// Cluster is what the API needs of the node's membership (engine/ha's
// Members has these methods); SingleNode is a dispatcher alone.
type Cluster interface {
	// Leading reports whether this node leads now: it serves requests
	// itself. Called for every request: must be cheap.
	Leading() bool
	// Leader returns the node a standby forwards to and its advertised
	// address; ok is false when none is known. Called for every request
	// on a standby: must be cheap while a leader is known.
	Leader(ctx context.Context) (name, address string, ok bool)
	// State is the answer to GET /v1/cluster.
	State(ctx context.Context) (view.Cluster, error)
}

// hereRoutes are answered by the node asked, leading or not: its health,
// its metrics and its view of the cluster. A standby forwards every
// other route to the leader.
var hereRoutes = map[string]bool{
	"GET /healthz":    true,
	"GET /metrics":    true,
	"GET /v1/cluster": true,
}

// SingleNode is a dispatcher that is not one node of a cluster: it always
// leads, at epoch 0.
func SingleNode(name, address string) Cluster { return single{name: name, address: address} }

type single struct{ name, address string }

func (single) Leading() bool                                 { return true }
func (single) Leader(context.Context) (string, string, bool) { return "", "", false }
func (s single) State(context.Context) (view.Cluster, error) {
	return view.Cluster{Leader: s.name, Self: s.name, Nodes: []view.ClusterNode{
		{Name: s.name, Role: view.RoleLeader, Address: s.address, LastSeen: time.Now().UTC()}}}, nil
}

func (s *server) cluster(w http.ResponseWriter, r *http.Request) {
	c, err := s.clusterOf.State(r.Context())
	if err != nil {
		s.log.Warn("api: cannot read the cluster", "err", err)
		writeError(w, &httpError{status: http.StatusServiceUnavailable, msg: "this node cannot read the cluster from the store now: retry in a few seconds (its log says why)"})
		return
	}
	if c.Nodes == nil {
		c.Nodes = []view.ClusterNode{}
	}
	writeJSON(w, http.StatusOK, c)
}
