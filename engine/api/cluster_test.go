package api

import (
	"net/http/httptest"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

// TestSingleNodeCluster: a dispatcher alone answers GET /v1/cluster with
// itself as the leader at epoch 0, seen now, and serves every request
// itself.
func TestSingleNodeCluster(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: e.eng, Token: testToken, Cluster: SingleNode("n1", "https://n1:7070")}))
	defer srv.Close()
	c := NewClient(srv.URL, testToken)
	before := time.Now()
	got, err := c.Cluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := got.Nodes
	if got.Leader != "n1" || got.Self != "n1" || got.Epoch != 0 || len(n) != 1 ||
		n[0] != (view.ClusterNode{Name: "n1", Role: view.RoleLeader, Address: "https://n1:7070", LastSeen: n[0].LastSeen}) ||
		n[0].LastSeen.Before(before.Add(-time.Second)) {
		t.Fatalf("a single node's cluster: %+v, %v; want n1 leading at epoch 0, seen now", got, err)
	}
	if _, err := c.Summary(t.Context()); err != nil {
		t.Fatalf("a single node serves requests itself: %v", err)
	}
}
