package pgstore

import (
	"context"
	"fmt"
	"testing"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/view"
)

// TestNodesTable: a beat inserts a node's row and the next replaces it,
// last_seen on the database's clock; a node that stops beating keeps its
// row and its last_seen while the others' move on. Every node reads the
// same peer secret, made once.
func TestNodesTable(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, s2 := open(t, url), open(t, url)
	defer s.Close()
	defer s2.Close()
	ctx := context.Background()
	if nodes, err := s.Nodes(ctx); err != nil || len(nodes) != 0 {
		t.Fatalf("a new store's nodes: %+v, %v; want none", nodes, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Beat(ctx, ha.Beat{Node: "b", Role: "standby", Address: "https://b:7070", Epoch: 0}))
	must(s2.Beat(ctx, ha.Beat{Node: "a", Role: "leader", Address: "https://a:7070", Epoch: 1, Fingerprint: "ab12"}))
	must(s.Beat(ctx, ha.Beat{Node: "b", Role: "standby", Address: "https://b:7071", Epoch: 1}))
	nodes, err := s.Nodes(ctx)
	must(err)
	if len(nodes) != 2 || nodes[0].Name != "a" || nodes[0].Role != "leader" || nodes[0].Epoch != 1 || nodes[0].Address != "https://a:7070" || nodes[0].TLSFingerprint != "ab12" ||
		nodes[1].Name != "b" || nodes[1].Role != "standby" || nodes[1].Epoch != 1 || nodes[1].Address != "https://b:7071" || nodes[1].TLSFingerprint != "" {
		t.Fatalf("nodes %+v; want a (leader, epoch 1) then b (standby, its second beat)", nodes)
	}
	quiet := nodes[0].LastSeen
	if quiet.IsZero() || !nodes[1].LastSeen.After(quiet) {
		t.Fatalf("last_seen: a %s, b %s; want b's later beat after a's", quiet, nodes[1].LastSeen)
	}
	// a goes quiet; b beats on.
	var now []view.ClusterNode
	wait.With{Step: func() { must(s.Beat(ctx, ha.Beat{Node: "b", Role: "standby", Address: "https://b:7071", Epoch: 1})) },
		Seen: func() string { return fmt.Sprintf("nodes %+v", now) }}.
		Until(t, "b's last_seen to pass a's by 50ms", 5e9, func() bool {
			got, err := s.Nodes(ctx)
			must(err)
			now = got
			return len(got) == 2 && got[1].LastSeen.Sub(quiet) > 50e6
		})
	if !now[0].LastSeen.Equal(quiet) || now[0].Role != "leader" {
		t.Fatalf("the quiet node a: %+v; want its last beat kept (last_seen %s)", now[0], quiet)
	}
	p1, err := s.PeerSecret(ctx)
	must(err)
	p2, err := s2.PeerSecret(ctx)
	must(err)
	if len(p1) != 64 || p1 != p2 {
		t.Fatalf("peer secrets %q and %q; want one 64-hex secret for both nodes", p1, p2)
	}
}
