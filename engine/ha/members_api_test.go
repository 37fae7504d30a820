package ha_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/store/pgstore"
)

// TestMembersServeTheAPI: two nodes on a real database, each an API
// server over its Members and the store's peer secret. Requests sent to
// the standby reach the leader at the address in the lease, with the
// caller's identity; the standby answers GET /v1/cluster itself. Once the
// leader stops and the standby takes over, it serves requests itself.
func TestMembersServeTheAPI(t *testing.T) {
	url := pgtest.NewDatabase(t)
	const token = "tok"
	type side struct {
		store *pgstore.Store
		el    *ha.Elector
		m     *ha.Members
		srv   *httptest.Server
		hits  atomic.Int32
	}
	ctx := context.Background()
	mk := func(name string) *side {
		s := &side{}
		st, err := pgstore.Open(pgstore.Options{URL: url, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		secret, err := st.PeerSecret(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.store = st
		var h http.Handler
		s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.hits.Add(1); h.ServeHTTP(w, r) }))
		t.Cleanup(s.srv.Close)
		s.el = ha.New(st, ha.Options{Node: name, Address: s.srv.URL, Lease: ha.MinLease, Retry: 50 * time.Millisecond})
		s.m = ha.NewMembers(st, st, ha.MembersOptions{Node: name, Address: s.srv.URL, Retry: 50 * time.Millisecond, Token: s.el.Token})
		h = api.NewServer(api.ServerOptions{Token: token, Cluster: s.m, PeerSecret: secret})
		return s
	}
	a, b := mk("a"), mk("b")
	a.el.Step(ctx)
	a.m.Step(ctx)
	b.m.Step(ctx)
	c := api.NewClient(b.srv.URL, token)
	id, err := c.WhoAmI(ctx)
	if err != nil || id.Actor != "token:default" || a.hits.Load() != 1 {
		t.Fatalf("whoami through the standby b: %+v, %v, %d requests at a; want a's answer for token:default", id, err, a.hits.Load())
	}
	cl, err := c.Cluster(ctx)
	if err != nil || cl.Self != "b" || cl.Leader != "a" || cl.Epoch != 1 || len(cl.Nodes) != 2 || a.hits.Load() != 1 {
		t.Fatalf("the cluster from b: %+v, %v (%d requests at a); want b's own answer: a leads at epoch 1, two nodes", cl, err, a.hits.Load())
	}
	// a stops: b takes over once the lease has run out, and serves.
	wait.With{Step: func() { b.el.Step(ctx); b.m.Step(ctx) }, Seen: func() string { return fmt.Sprintf("b leading %v", b.m.Leading()) }}.
		Until(t, "b to take over", 3*ha.MinLease, b.m.Leading)
	before := a.hits.Load()
	if id, err := c.WhoAmI(ctx); err != nil || id.Actor != "token:default" || a.hits.Load() != before {
		t.Fatalf("whoami at b, now leading: %+v, %v, %d new requests at a; want b's own answer", id, err, a.hits.Load()-before)
	}
}
