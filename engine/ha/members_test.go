package ha_test

import (
	"context"
	"fmt"
	"testing"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/view"
)

// TestMembers: two nodes on a real database, a leading: each beats with
// its role and the epoch it knows; the standby forwards to a, the leader
// to no one; the cluster reads the same from either node. When a goes
// quiet its row keeps its last beat, and once b takes over b's view names
// b the leader at the higher epoch, a's stale row still listed.
func TestMembers(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := newNode(t, url, "a", ha.MinLease, nil), newNode(t, url, "b", ha.MinLease, nil)
	members := func(n *node, name string) *ha.Members {
		return ha.NewMembers(n.store, n.store, ha.MembersOptions{Node: name, Address: "https://" + name + ":7070", Fingerprint: "fp-" + name, Retry: 50e6, Token: n.el.Token})
	}
	ma, mb := members(a, "a"), members(b, "b")
	ctx := context.Background()
	a.el.Step(ctx)
	ma.Step(ctx)
	mb.Step(ctx)
	if !ma.Leading() || mb.Leading() {
		t.Fatalf("leading: a %v, b %v; want a only", ma.Leading(), mb.Leading())
	}
	if name, addr, ok := mb.Leader(ctx); !ok || name != "a" || addr != "https://a:7070" {
		t.Fatalf("b forwards to %q at %q (%v); want a at https://a:7070", name, addr, ok)
	}
	// A standby that has not read the lease since the election (its next
	// Step is up to Retry away) names the leader all the same, as GET
	// /v1/cluster does: it reads the lease when its last reading named none.
	if name, _, ok := members(b, "b").Leader(ctx); !ok || name != "a" {
		t.Fatalf("a standby yet to step forwards to %q (%v); want a, whom the lease names", name, ok)
	}
	if lead, epoch, h := ma.Role(); !lead || epoch != 1 || h.Node != "a" || h.Epoch != 1 {
		t.Fatalf("a's role: leading %v, epoch %d, lease %+v; want leading with 1, the lease a's", lead, epoch, h)
	}
	if lead, _, h := mb.Role(); lead || h.Node != "a" || h.Address != "https://a:7070" || !h.Valid {
		t.Fatalf("b's role: leading %v, lease %+v; want standing by, the lease a's and valid", lead, h)
	}
	if fp := mb.LeaderFingerprint(); fp != "fp-a" {
		t.Fatalf("b pins %q for the leader; want a's fp-a", fp)
	}
	if fp := ma.LeaderFingerprint(); fp != "" {
		t.Fatalf("the leader a pins %q; want none (it forwards nowhere)", fp)
	}
	if name, _, ok := ma.Leader(ctx); ok {
		t.Fatalf("the leader a would forward to %q; want no one (it serves)", name)
	}
	st, err := mb.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != "a" || st.Epoch != 1 || st.Self != "b" || len(st.Nodes) != 2 ||
		st.Nodes[0] != (view.ClusterNode{Name: "a", Role: view.RoleLeader, Address: "https://a:7070", Epoch: 1, LastSeen: st.Nodes[0].LastSeen, TLSFingerprint: "fp-a"}) ||
		st.Nodes[1] != (view.ClusterNode{Name: "b", Role: view.RoleStandby, Address: "https://b:7070", Epoch: 1, LastSeen: st.Nodes[1].LastSeen, TLSFingerprint: "fp-b"}) {
		t.Fatalf("the cluster from b: %+v; want leader a at epoch 1, a leading and b standing by at epoch 1", st)
	}
	if sb := st.Standbys(); len(sb) != 1 || sb[0].Name != "b" {
		t.Fatalf("standbys %+v; want b", sb)
	}
	aSeen := st.Nodes[0].LastSeen
	// a stops (no more steps of its elector or membership): b takes
	// over once the lease has run out in the database.
	wait.With{Step: func() { b.el.Step(ctx); mb.Step(ctx) }, Seen: func() string { return fmt.Sprintf("lease %+v", b.holder(t)) }}.
		Until(t, "b to take over and beat as leader", 3*ha.MinLease, func() bool { return mb.Leading() })
	mb.Step(ctx)
	st, err = mb.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != "b" || st.Epoch != 2 || len(st.Nodes) != 2 || st.Nodes[1].Role != view.RoleLeader || st.Nodes[1].Epoch != 2 {
		t.Fatalf("the cluster after the takeover: %+v; want b leading at epoch 2", st)
	}
	if st.Nodes[0].Role != view.RoleLeader || st.Nodes[0].Epoch != 1 || !st.Nodes[0].LastSeen.Equal(aSeen) || !st.Nodes[1].LastSeen.After(aSeen) {
		t.Fatalf("a's row %+v; want its last beat kept (leader, epoch 1, last seen %s), older than b's", st.Nodes[0], aSeen)
	}
	if _, _, ok := mb.Leader(ctx); ok {
		t.Fatal("b, now leading, would still forward")
	}
}

// TestMembersRun: Run beats every Retry until its context ends, then
// returns.
func TestMembersRun(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := newNode(t, url, "a", ha.MinLease, nil)
	m := ha.NewMembers(a.store, a.store, ha.MembersOptions{Node: "a", Address: "https://a:7070", Retry: 20e6, Token: a.el.Token})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	var seen []view.ClusterNode
	first := func() bool {
		n, err := a.store.Nodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		seen = n
		return len(n) == 1
	}
	wait.With{Seen: func() string { return fmt.Sprintf("nodes %+v", seen) }}.Until(t, "a's first beat", 10e9, first)
	beat := seen[0].LastSeen
	wait.With{Seen: func() string { return fmt.Sprintf("nodes %+v", seen) }}.
		Until(t, "a's next beat", 10e9, func() bool { return first() && seen[0].LastSeen.After(beat) })
	if seen[0].Role != view.RoleStandby {
		t.Fatalf("a, never elected, beat as %q", seen[0].Role)
	}
	cancel()
	wait.Until(t, "Run to return once its context ended", 10e9, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}
