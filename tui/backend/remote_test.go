package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

const testToken = "s3cret-token"

// newRemoteEnv serves e's engine with api.NewServer and returns a Remote
// for it.
func newRemoteEnv(t *testing.T) (*testEnv, *Remote, *httptest.Server) {
	t.Helper()
	e := newTestEnv(t)
	srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: e.eng, Token: testToken}))
	t.Cleanup(srv.Close) // runs before the engine's close
	c := api.NewClient(srv.URL, testToken)
	return e, NewRemote(c, "remote "+srv.URL), srv
}

func TestRemoteSnapshot(t *testing.T) {
	e, r, srv := newRemoteEnv(t)
	if r.Describe() != "remote "+srv.URL {
		t.Errorf("Describe() = %q", r.Describe())
	}
	short := e.submit("short", 3*time.Second, 1)
	long := e.submit("long", -1, 1)
	big := e.submit("big", -1, 4)
	e.until("all running", 60, func() bool {
		return e.container(long).State == queue.Running && e.container(big).State == queue.Running
	})
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, e, s, short, long, big)

	// The same as the in-process backend sees.
	in, err := NewInProcess(e.eng, "x").Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Events) != len(s.Events) || in.Summary.PricePerHour != s.Summary.PricePerHour ||
		len(in.Instances) != len(s.Instances) {
		t.Errorf("remote and in-process snapshots differ: %d/%d events, $%v/$%v, %d/%d instances",
			len(s.Events), len(in.Events), s.Summary.PricePerHour, in.Summary.PricePerHour,
			len(s.Instances), len(in.Instances))
	}
}

func TestRemotePaging(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	r.pageSize = 2
	var ids []string
	for range 7 {
		ids = append(ids, e.submit("c", -1, 1))
		e.clk.Advance(time.Millisecond)
	}
	e.step(1) // an instance, so that checkSnapshot finds one
	e.until("an instance", 10, func() bool { return len(e.eng.Instances()) > 0 })
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, e, s, ids...)
	for i, c := range s.Containers {
		if c.ID != ids[i] {
			t.Errorf("container %d is %s, want %s (creation order)", i, c.ID, ids[i])
		}
	}
}

func TestRemoteVerbs(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	ctx := context.Background()
	actor := "token:default" // the token's name, not the client's header
	id := e.submit("c", -1, 1)

	if err := r.SetPaused(ctx, true, "maintenance"); err != nil {
		t.Fatal(err)
	}
	if !e.eng.Summary().Paused {
		t.Error("not paused")
	}
	if ev := e.lastEvent(); ev.Actor != actor || ev.Reason != "maintenance" {
		t.Errorf("pause recorded as %+v, want actor %q", ev, actor)
	}
	if err := r.ContainerVerb(ctx, id, view.ContainerHold, "wait"); err != nil {
		t.Fatal(err)
	}
	if !e.container(id).Held {
		t.Error("hold: not held")
	}
	if ev := e.lastEvent(); ev.Actor != actor || ev.Action != "hold" || ev.Target != id {
		t.Errorf("hold recorded as %+v", ev)
	}
	if err := r.ContainerVerb(ctx, id, view.ContainerRelease, ""); err != nil {
		t.Fatal(err)
	}
	if e.container(id).Held {
		t.Error("release: still held")
	}
	if err := r.SetPriority(ctx, id, 9); err != nil {
		t.Fatal(err)
	}
	if p := e.container(id).Priority; p != 9 {
		t.Errorf("priority %d, want 9", p)
	}
	if err := r.SetPaused(ctx, false, ""); err != nil {
		t.Fatal(err)
	}
	if e.eng.Summary().Paused {
		t.Error("still paused")
	}

	e.until("running", 60, func() bool { return e.container(id).State == queue.Running })
	inst := e.container(id).InstanceID
	if out, err := r.Logs(ctx, id, 0); err != nil || !bytes.Contains(out, []byte("fake: ")) {
		t.Errorf("Logs = %q, %v", out, err)
	}
	for _, v := range []struct {
		verb view.InstanceVerb
		want worker.IdleBehavior
	}{{view.InstanceHold, worker.IdleHold}, {view.InstanceDrain, worker.IdleDrain}, {view.InstanceRun, worker.IdleRun}} {
		if err := r.InstanceVerb(ctx, inst, v.verb, "r"); err != nil {
			t.Fatalf("%s: %v", v.verb, err)
		}
		if got := e.instance(inst).IdleBehavior; got != v.want {
			t.Errorf("%s: idle behaviour %s, want %s", v.verb, got, v.want)
		}
	}
	if err := r.ContainerVerb(ctx, id, view.ContainerKill, "enough"); err != nil {
		t.Fatal(err)
	}
	e.until("killed", 60, func() bool { return e.container(id).State == queue.Cancelled })
	if err := r.InstanceVerb(ctx, inst, view.InstanceKill, "bad"); err != nil {
		t.Fatal(err)
	}

	var ae *api.APIError
	if err := r.ContainerVerb(ctx, "no-such-container", view.ContainerHold, ""); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("hold of an unknown container: %v", err)
	}
	if err := r.InstanceVerb(ctx, "no-such-instance", view.InstanceDrain, ""); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("drain of an unknown instance: %v", err)
	}
	if err := r.InstanceVerb(ctx, inst, view.InstanceVerb(99), ""); err == nil {
		t.Error("unknown instance verb accepted")
	}
	if err := r.ContainerVerb(ctx, id, view.ContainerVerb(99), ""); err == nil {
		t.Error("unknown container verb accepted")
	}
}

func TestRemoteErrors(t *testing.T) {
	_, r, srv := newRemoteEnv(t)
	bad := NewRemote(api.NewClient(srv.URL, "wrong"), "x")
	var ae *api.APIError
	if _, err := bad.Snapshot(context.Background()); !errors.As(err, &ae) || ae.Status != 403 {
		t.Errorf("wrong token: %v, want a 403", err)
	}
	// NewRemote copies the client: the caller's Actor is untouched.
	c := api.NewClient(srv.URL, testToken)
	NewRemote(c, "x")
	if c.Actor != "" {
		t.Errorf("caller's client changed: Actor %q", c.Actor)
	}
	srv.Close()
	if _, err := r.Snapshot(context.Background()); err == nil {
		t.Error("snapshot from a closed server: no error")
	}
}

func TestRemoteChanges(t *testing.T) {
	_, r, _ := newRemoteEnv(t)
	r.Refresh = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.Changes(ctx)
	for range 3 {
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatal("closed early")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no tick")
		}
	}
	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("not closed after cancel")
		}
	}
}

// countingTransport counts requests and response bytes per path.
type countingTransport struct {
	mu    sync.Mutex
	reqs  map[string]int
	bytes int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs[req.URL.Path]++
	if err == nil && resp.ContentLength > 0 {
		c.bytes += resp.ContentLength
	}
	return resp, err
}

func TestRemoteIdleRefreshReadsNoLists(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	for i := 0; i < 20; i++ {
		e.submit(fmt.Sprint("idle-", i), -1, 1)
	}
	e.until("some running", 60, func() bool { return e.eng.Summary().Containers[queue.Running] > 0 })
	e.step(5) // settle
	ct := &countingTransport{reqs: map[string]int{}}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: ct}
	r := NewRemote(c, "remote")
	first, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ct.mu.Lock()
	full := ct.reqs["/v1/containers"]
	ct.mu.Unlock()
	for i := 0; i < 5; i++ { // nothing changes between these
		s, err := r.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Containers) != len(first.Containers) {
			t.Fatalf("reused snapshot lost containers")
		}
	}
	ct.mu.Lock()
	got := ct.reqs["/v1/containers"]
	ct.mu.Unlock()
	if got != full {
		t.Fatalf("idle refreshes read the container list %d more times", got-full)
	}
	// A change is seen on the next refresh.
	id := e.submit("after", -1, 1)
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range s.Containers {
		found = found || c.ID == id
	}
	if !found {
		t.Fatalf("new container not in the snapshot after a change")
	}
}

// lateVerbTransport applies a verb while the first full snapshot runs, at
// the worst moment for the console: after one of the event log and the
// container list was read, before the other is. Whichever request comes
// first is answered and then the verb applied; the other waits for the
// verb, so the order holds even if the two are read in parallel.
type lateVerbTransport struct {
	verb    func()
	applied chan struct{}

	mu      sync.Mutex
	claimed bool // a request was chosen to go first
}

func (h *lateVerbTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path != "/v1/events" && req.URL.Path != "/v1/containers" {
		return http.DefaultTransport.RoundTrip(req)
	}
	h.mu.Lock()
	first := !h.claimed
	h.claimed = true
	h.mu.Unlock()
	if !first {
		<-h.applied
		return http.DefaultTransport.RoundTrip(req)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	h.verb()
	close(h.applied)
	return resp, err
}

// A verb that lands while a full snapshot is taken must show on the next
// refresh: the cheap check may reuse lists only if they are no older than
// the events it compares with.
func TestRemoteVerbDuringSnapshotIsSeenNextRefresh(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	if err := e.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	id := e.submit("late-hold", -1, 1)
	ht := &lateVerbTransport{applied: make(chan struct{}), verb: func() {
		if _, err := e.eng.HoldContainer(id, "test", "during the snapshot"); err != nil {
			t.Error(err)
		}
	}}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: ht}
	r := NewRemote(c, "remote")
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ct := range s.Containers {
		if ct.ID == id {
			found = true
			if !ct.Held {
				t.Fatalf("the refresh after the hold still shows %s not held", id)
			}
		}
	}
	if !found {
		t.Fatalf("container %s missing", id)
	}
}

// A pass that only changes pending reasons (no event, no count) must still
// reach the console: the summary's containers generation moves.
func TestRemoteSeesPendingReasonChanges(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	if err := e.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	id := e.submit("reason", -1, 1)
	e.step(1)
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.HoldContainer(id, "test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Snapshot(context.Background()); err != nil { // reads the hold, before any pass
		t.Fatal(err)
	}
	e.step(1) // the pass gives it the reason "held"; no event, same counts
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Containers {
		if c.ID == id && c.ReasonCode != queue.ReasonHeld {
			t.Fatalf("reason after the pass: %s %q, want %s", c.ReasonCode, c.Reason, queue.ReasonHeld)
		}
	}
}

// TestRemotePacesListReads checks that after a full read that took d the
// container list is not read again before listDuty×d, while the summary
// is fresh on every refresh, and that it is read once the pause is over.
func TestRemotePacesListReads(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	e.submit("first", -1, 1)
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.listCost = time.Minute // as if the read had taken a minute
	r.mu.Unlock()
	id := e.submit("second", -1, 1)
	has := func(s *Snapshot) bool {
		for _, c := range s.Containers {
			if c.ID == id {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		at       time.Duration
		wantList bool
	}{
		{time.Second, false},
		{listDuty*time.Minute - time.Second, false},
		{listDuty * time.Minute, true},
	} {
		now = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC).Add(tc.at)
		s, err := r.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := s.Summary.Containers[queue.Queued] + s.Summary.Containers[queue.Locked] + s.Summary.Containers[queue.Running] + s.Summary.Containers[queue.Complete]; n < 2 {
			t.Errorf("at %s: the summary counts %d containers, want it fresh (2)", tc.at, n)
		}
		if got := has(s); got != tc.wantList {
			t.Errorf("at %s: the list has the new container = %v, want %v", tc.at, got, tc.wantList)
		}
	}
}
