package backend

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
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
	for i, c := range rowsList(s) {
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
		case <-time.After(wait.Budget(5 * time.Second)):
			t.Fatal("no tick")
		}
	}
	cancel()
	deadline := time.After(wait.Budget(5 * time.Second))
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

// containerBytes counts the requests for containers and the bytes of their
// answers (chunked ones too).
type containerBytes struct{ reqs, n atomic.Int64 }

func (c *containerBytes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == "/v1/containers" {
		c.reqs.Add(1)
		resp.Body = &countedBody{resp.Body, &c.n}
	}
	return resp, err
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
		if s.Rows.Len() != first.Rows.Len() {
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
	for _, c := range rowsList(s) {
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
	for _, ct := range rowsList(s) {
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
	for _, c := range rowsList(s) {
		if c.ID == id && c.ReasonCode != queue.ReasonHeld {
			t.Fatalf("reason after the pass: %s %q, want %s", c.ReasonCode, c.Reason, queue.ReasonHeld)
		}
	}
}

// After the first read a refresh reads only what changed: the bytes of
// the container requests are a fraction of the first read's, the
// snapshot shows the changes, and the earlier snapshot is left as it was.
func TestRemoteReadsOnlyChanges(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	if err := e.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 40 {
		ids = append(ids, e.submit(fmt.Sprint("c-", i), -1, 1))
	}
	// A change before the first read: the log no longer lists the
	// containers in submission order, the console still shows them so.
	if _, err := e.eng.SetPriority(ids[5], 3, "test", ""); err != nil {
		t.Fatal(err)
	}
	ct := &containerBytes{}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: ct}
	r := NewRemote(c, "remote")
	r.pageSize = 7
	first, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	firstReqs, firstBytes := ct.reqs.Swap(0), ct.n.Swap(0)
	firstRows := rowsList(first)
	if len(firstRows) != 40 || firstReqs < 6 {
		t.Fatalf("first read: %d containers in %d requests of 7; want 40 in 6", len(firstRows), firstReqs)
	}
	if _, err := e.eng.HoldContainer(ids[3], "test", ""); err != nil {
		t.Fatal(err)
	}
	added := e.submit("added", -1, 1)
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if reqs, bytes := ct.reqs.Load(), ct.n.Load(); reqs != 1 || bytes*5 > firstBytes {
		t.Fatalf("a refresh after 2 changes made %d container requests of %d bytes (the first read %d)", reqs, bytes, firstBytes)
	}
	byID := map[string]Row{}
	for _, c := range rowsList(s) {
		byID[c.ID] = c
	}
	if s.Rows.Len() != 41 || !byID[ids[3]].Held || byID[added].ID == "" {
		t.Fatalf("after a hold and a submit: %d containers, %s held=%v, %s present=%v", s.Rows.Len(), ids[3], byID[ids[3]].Held, added, byID[added].ID != "")
	}
	for _, rows := range [][]Row{firstRows, rowsList(s)} {
		if !slices.IsSortedFunc(rows, func(a, b Row) int { return cmp.Compare(a.Seq, b.Seq) }) {
			t.Fatal("a snapshot's containers are not in submission order")
		}
	}
	if first.Rows != s.Rows {
		t.Fatal("the changes were applied to a second copy of the rows, not in place")
	}
}

// A console whose generation the daemon no longer knows (a restart, or
// too far behind) reads everything again.
func TestRemoteReloadsWhenTheDaemonForgot(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	e.submit("a", -1, 1)
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.copy.fetch.Lock()
	r.copy.gen += 1 << 40 // as if read from another run of the daemon
	r.copy.fetch.Unlock()
	id := e.submit("b", -1, 1)
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("a refresh after the daemon forgot the console's generation: %v", err)
	}
	found := false
	for _, c := range rowsList(s) {
		found = found || c.ID == id
	}
	if s.Rows.Len() != 2 || !found {
		t.Fatalf("after reloading: %d containers, %s found=%v", s.Rows.Len(), id, found)
	}
}

// The watch wakes the console when a container changes, long before the
// refresh ticker would.
func TestRemoteWatchWakesOnChange(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	r.Refresh = time.Hour
	e.submit("a", -1, 1)
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Changes(ctx)
	// The watch goes on from the copy's generation, so a change after the
	// snapshot wakes it whether or not its request is waiting yet.
	at := time.Now()
	e.submit("b", -1, 1)
	select {
	case <-ch:
		t.Logf("woken %s after the submit", time.Since(at))
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatal("no change signalled within 20 s of a submit (the ticker is an hour)")
	}
}

// numberLine numbers the line as the scheduler does: Locked before
// Queued, priority descending, first seen, submission; held, priority 0
// and started containers hold no place, though they may sit among them.
func TestNumberLine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pos := view.ReasonPosition
	ns := func(t time.Time) int64 { return t.UnixNano() }
	s := &Rows{}
	for _, r := range []Row{
		{State: view.Queued, Priority: 1, FirstSeenAt: ns(t0), ID: "late-low", ReasonCode: pos, Seq: 9},
		{State: view.Queued, Priority: 5, FirstSeenAt: ns(t0.Add(time.Second)), ID: "high", ReasonCode: pos, Seq: 3},
		{State: view.Queued, Priority: 5, Held: true, FirstSeenAt: ns(t0), ID: "held", ReasonCode: view.ReasonHeld},
		{State: view.Locked, Priority: 1, FirstSeenAt: ns(t0.Add(time.Hour)), ID: "locked", ReasonCode: view.ReasonQuota},
		{State: view.Running, Priority: 9, FirstSeenAt: ns(t0), ID: "running"},
		{State: view.Queued, Priority: 0, FirstSeenAt: ns(t0), ID: "zero", ReasonCode: view.ReasonPriorityZero},
		{State: view.Queued, Priority: 1, FirstSeenAt: ns(t0), ID: "early-low", ReasonCode: pos, Seq: 2},
	} {
		s.rows.push(r)
	}
	s.numberLine()
	want := map[string]string{"locked": "", "high": "position 2 in queue", "early-low": "position 3 in queue", "late-low": "position 4 in queue"}
	for i := range s.rows.len() {
		c := s.rows.at(i)
		if w, ok := want[c.ID]; ok && c.ReasonText(s.placeAt(i)) != w {
			t.Errorf("%s: reason %q, want %q", c.ID, c.ReasonText(s.placeAt(i)), w)
		}
	}
}

// sortBySeq puts rows in submission order, whatever order they came in.
func TestSortBySeq(t *testing.T) {
	for _, seqs := range [][]uint64{{}, {1}, {1, 2, 3}, {3, 1, 2}, {5, 4, 3, 2, 1}, {2, 1, 4, 3, 6, 5}, {7, 3, 9, 1, 8, 2}} {
		var ps pages
		for _, s := range seqs {
			ps.push(Row{Seq: s, ID: fmt.Sprint("c", s)})
		}
		sortBySeq(&ps)
		var rows []Row
		for i := range ps.len() {
			rows = append(rows, *ps.at(i))
		}
		for i := 1; i < len(rows); i++ {
			if rows[i-1].Seq > rows[i].Seq {
				t.Fatalf("%v: sorted to %v", seqs, rows)
			}
		}
		for _, c := range rows {
			if c.ID != fmt.Sprint("c", c.Seq) {
				t.Fatalf("%v: row %s carries seq %d", seqs, c.ID, c.Seq)
			}
		}
	}
}

// Containers dropped beyond keep_finished leave the console's copy, and
// its index by id stays right through drops and submits.
func TestRemoteDropsFinished(t *testing.T) {
	cfg := enginetest.Config(t)
	cfg.Containers.KeepFinished = 2
	env := enginetest.New(t, cfg, fake.Options{}, engine.Options{})
	e := &testEnv{Env: env, t: t, clk: env.Clock, eng: env.Engine}
	srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: e.eng, Token: testToken}))
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, testToken), "remote")
	if err := e.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 12 {
		ids = append(ids, e.submit(fmt.Sprint("d-", i), -1, 1))
	}
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	for round, kill := range [][]string{ids[0:4], ids[6:9], ids[4:6]} {
		for _, id := range kill {
			if _, err := e.eng.KillContainer(id, "test", ""); err != nil {
				t.Fatal(err)
			}
		}
		e.submit(fmt.Sprint("new-", round), -1, 1)
		e.step(1) // a pass's flush drops those beyond keep_finished
		s, err := r.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want, _ := e.eng.Containers(engine.ListOptions{})
		got := map[string]view.State{}
		for _, c := range rowsList(s) {
			got[c.ID] = c.State
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: the console has %d containers, the engine %d", round, len(got), len(want))
		}
		for _, c := range want {
			if got[c.ID] != c.State {
				t.Fatalf("round %d: %s is %q in the console, %s in the engine", round, c.ID, got[c.ID], c.State)
			}
		}
		checkIndex(t, fmt.Sprint("round ", round), r.copy.rows)
	}
	if total, _ := e.eng.Containers(engine.ListOptions{}); len(total) != 12+3-(9-2) {
		t.Fatalf("%d containers left, want 8: the test did not drop what it meant to", len(total))
	}
}

// A watch the daemon answers 410 (it restarted) wakes the console at once,
// so that it reads everything again before its next tick.
func TestRemoteWatchWakesOnReload(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	r.Refresh = time.Hour
	e.submit("a", -1, 1)
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.copy.fetch.Lock()
	r.copy.gen += 1 << 40 // as if read from another run of the daemon
	r.copy.fetch.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	select {
	case <-r.Changes(ctx):
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatal("no change signalled within 20 s of the daemon answering 410 (the ticker is an hour)")
	}
}

// TestRemoteRefreshReadsUpToItsStart: changes made while a refresh reads
// its pages are the next refresh's, not read on by this one (under a churn
// it would chase them, and show what it was woken for that much later).
func TestRemoteRefreshReadsUpToItsStart(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	if err := e.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 30 {
		ids = append(ids, e.submit(fmt.Sprint("c-", i), -1, 1))
	}
	mid := &midRefresh{}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: mid}
	r := NewRemote(c, "remote")
	r.pageSize = 4
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Ten held before the refresh (three pages of 4), ten more once its
	// first page is read.
	for _, id := range ids[:10] {
		if _, err := e.eng.HoldContainer(id, "test", ""); err != nil {
			t.Fatal(err)
		}
	}
	more := func() {
		for _, id := range ids[10:20] {
			if _, err := e.eng.HoldContainer(id, "test", ""); err != nil {
				t.Error(err)
			}
		}
	}
	mid.after.Store(&more)
	mid.pages.Store(0)
	held := func(s *Snapshot) (n int) {
		for _, row := range rowsList(s) {
			if row.Held {
				n++
			}
		}
		return n
	}
	s, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The third page, of 4, holds the last 2 of the ten and may hold 2
	// of the later ones: a page is filled.
	if got, pages := held(s), mid.pages.Load(); got < 10 || got > 12 || pages != 3 {
		t.Fatalf("a refresh woken for 10 holds, 10 more made after its first page: %d held in %d pages of changes, want 10–12 in 3", got, pages)
	}
	s, err = r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := held(s); got != 20 {
		t.Fatalf("the next refresh: %d held, want 20", got)
	}
}

// midRefresh counts the pages of changes a refresh reads (changed_since
// above 0) and runs after, once, when the first has been read.
type midRefresh struct {
	pages atomic.Int64
	after atomic.Pointer[func()]
}

func (m *midRefresh) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	q := r.URL.Query()
	if err != nil || r.URL.Path != "/v1/containers" || q.Get("changed_since") == "0" || q.Get("changed_since") == "" || q.Get("wait") != "" {
		return resp, err
	}
	m.pages.Add(1)
	if f := m.after.Swap(nil); f != nil {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			return nil, rerr
		}
		(*f)()
	}
	return resp, err
}
