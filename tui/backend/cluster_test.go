package backend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// twoNodes is a node leading a cluster of two.
type twoNodes struct{}

func (twoNodes) Leading() bool                                 { return true }
func (twoNodes) Leader(context.Context) (string, string, bool) { return "", "", false }
func (twoNodes) State(context.Context) (view.Cluster, error) {
	return view.Cluster{Leader: "a", Epoch: 3, Self: "a", Nodes: []view.ClusterNode{
		{Name: "a", Role: view.RoleLeader, Epoch: 3}, {Name: "b", Role: view.RoleStandby, Epoch: 3, LastSeen: time.Unix(100, 0).UTC()}}}, nil
}

// TestRemoteReportsTheCluster: each snapshot, the full read and the cheap
// one after it, carries the cluster the node reports; a dispatcher that
// has no /v1/cluster leaves it out and the snapshot is good anyway.
func TestRemoteReportsTheCluster(t *testing.T) {
	e := newTestEnv(t)
	h := api.NewServer(api.ServerOptions{Engine: e.eng, Token: testToken, Cluster: twoNodes{}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, testToken), "remote")
	for i := range 2 {
		s, err := r.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if c := s.Cluster; c == nil || c.Leader != "a" || c.Epoch != 3 || len(c.Nodes) != 2 || !c.Nodes[1].LastSeen.Equal(time.Unix(100, 0)) {
			t.Fatalf("snapshot %d's cluster: %+v; want a leading b at epoch 3", i, c)
		}
	}
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v1/cluster" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"no such endpoint"}`))
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(old.Close)
	s, err := NewRemote(api.NewClient(old.URL, testToken), "remote").Snapshot(t.Context())
	if err != nil || s.Cluster != nil {
		t.Fatalf("a daemon without /v1/cluster: cluster %+v, %v; want none and a snapshot", s, err)
	}
}
