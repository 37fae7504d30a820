package tui

import (
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

// TestHeaderShowsTheCluster: with a cluster reported, the header's first
// line names the node talked to and its role, the leader and its epoch,
// and each standby with the age of its last heartbeat; with no leader it
// says NONE; a dispatcher alone (or no cluster) leaves the line as it was.
func TestHeaderShowsTheCluster(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 200, 30)
	s := fakeSnapshot(3, 5)
	cl := view.Cluster{Leader: "a", Epoch: 4, Self: "b", Nodes: []view.ClusterNode{
		{Name: "a", Role: view.RoleLeader, LastSeen: t0.Add(-time.Second), Epoch: 4},
		{Name: "b", Role: view.RoleStandby, LastSeen: t0.Add(-2 * time.Second), Epoch: 4},
		{Name: "c\x1b[2J", Role: view.RoleStandby, LastSeen: t0.Add(-5 * time.Minute), Epoch: 3},
	}}
	s.Cluster = &cl
	load(t, m, fb, s)
	first := lines(m)[0]
	want := `dispatch-tui  fake (test)  node b (standby)  leader a epoch 4  standbys b 2s, c\x1b[2J 5m0s`
	if !strings.HasPrefix(first, want) {
		t.Fatalf("header %q; want it to start %q", first, want)
	}
	noLeader := cl
	noLeader.Leader, noLeader.Self = "", "a"
	s2 := *s
	s2.Cluster = &noLeader
	load(t, m, fb, &s2)
	if first := lines(m)[0]; !strings.Contains(first, "node a (standby)  leader NONE epoch 4  standbys a 1s, b 2s, c") {
		t.Fatalf("header without a leader %q", first)
	}
	for _, c := range []*view.Cluster{nil, {Leader: "n1", Self: "n1", Nodes: []view.ClusterNode{{Name: "n1", Role: view.RoleLeader}}}} {
		s3 := *s
		s3.Cluster = c
		load(t, m, fb, &s3)
		if first := lines(m)[0]; strings.Contains(first, "node ") || strings.Contains(first, "leader") {
			t.Fatalf("header of a dispatcher alone (%+v) %q; want no cluster word", c, first)
		}
	}
}
