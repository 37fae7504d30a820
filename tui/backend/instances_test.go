package backend

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// instanceReads counts the requests for instances: whole lists (no
// changed_since, or 0) and reads of changes, and the bytes the client
// read of the latter.
type instanceReads struct {
	mu           sync.Mutex
	full, deltas int
	deltaBytes   atomic.Int64
}

func (c *instanceReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.URL.Path != "/v1/instances" {
		return resp, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := req.URL.Query().Get("changed_since"); s == "" || s == "0" {
		c.full++
	} else {
		c.deltas++
		resp.Body = &countedBody{resp.Body, &c.deltaBytes}
	}
	return resp, err
}

func (c *instanceReads) counts() (full, deltas int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.full, c.deltas
}

// sameInstances fails unless a console's instances are the engine's, in
// its order.
func sameInstances(t *testing.T, what string, got, want []view.Instance) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: the console has %d instances, the engine %d: %+v", what, len(got), len(want), got)
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.ID != w.ID || g.State != w.State || g.IdleBehavior != w.IdleBehavior || !slices.Equal(g.Containers, w.Containers) {
			t.Fatalf("%s: instance %d is %s %s %s %v in the console, %s %s %s %v in the engine",
				what, i, g.ID, g.State, g.IdleBehavior, g.Containers, w.ID, w.State, w.IdleBehavior, w.Containers)
		}
	}
}

// An attached console reads the instances whole once, then applies their
// changes — added, changed, removed — to its copy; a snapshot it handed
// out keeps its instances as they were; a 410 reads them whole again.
func TestRemoteInstanceDeltas(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	reads := &instanceReads{}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: reads}
	r := NewRemote(c, "remote")
	r.pageSize = 1 // every instance a page of its own
	ctx := context.Background()
	var running []string
	for _, name := range []string{"a", "b"} {
		id := e.submit(name, -1, 1)
		e.until(name+" running", 60, func() bool { return e.container(id).State == queue.Running })
		running = append(running, e.container(id).InstanceID)
	}
	s1, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameInstances(t, "first read", s1.Instances, e.eng.Instances())
	held := slices.Clone(s1.Instances)
	full1, _ := reads.counts() // the first page asks since 0; the next ones go on from it

	// Changed.
	if _, err := e.eng.ApplyInstanceVerb(running[0], view.InstanceHold, "test", ""); err != nil {
		t.Fatal(err)
	}
	s2, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameInstances(t, "after a hold", s2.Instances, e.eng.Instances())
	// Removed, and added: the killed instance's container starts on a
	// new one.
	if _, err := e.eng.ApplyInstanceVerb(running[1], view.InstanceKill, "test", ""); err != nil {
		t.Fatal(err)
	}
	e.until(running[1]+" gone and its container running again", 300, func() bool {
		_, there := e.eng.Instance(running[1])
		return !there && e.eng.Summary().Containers[queue.Running] == 2
	})
	s3, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameInstances(t, "after a kill", s3.Instances, e.eng.Instances())
	if slices.ContainsFunc(s3.Instances, func(v view.Instance) bool { return string(v.ID) == running[1] }) {
		t.Fatalf("%s destroyed, still in the console", running[1])
	}
	if !slices.EqualFunc(s1.Instances, held, func(a, b view.Instance) bool {
		return a.ID == b.ID && a.IdleBehavior == b.IdleBehavior && a.State == b.State
	}) {
		t.Fatalf("the first snapshot's instances changed under it: %+v, was %+v", s1.Instances, held)
	}
	if full, deltas := reads.counts(); full != full1 || deltas == 0 {
		t.Fatalf("%d whole reads and %d reads of changes; want the first read's %d, then changes only", full, deltas, full1)
	}

	// A daemon that does not know the copy's generation: read again.
	r.insts.mu.Lock()
	r.insts.gen += 1 << 40
	r.insts.mu.Unlock()
	s4, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameInstances(t, "after a 410", s4.Instances, e.eng.Instances())
	if full, _ := reads.counts(); full <= full1 {
		t.Fatalf("after a 410: %d whole reads, want more than the first read's %d", full, full1)
	}
}

// An idle attached console, refreshing and watching, never reads the
// instances whole again: its requests for them are reads of changes,
// answered with nothing.
func TestRemoteIdleReadsNoInstanceLists(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	reads := &instanceReads{}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: reads}
	r := NewRemote(c, "remote")
	r.Refresh = 10 * time.Millisecond
	r.watchWait = 50 * time.Millisecond
	for _, name := range []string{"a", "b", "c"} {
		e.submit(name, -1, 1)
	}
	e.until("3 running", 60, func() bool { return e.eng.Summary().Containers[queue.Running] == 3 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	full0, deltas0 := reads.counts()
	reads.deltaBytes.Store(0)
	ch := r.Changes(ctx)
	snapshots := 0
	wait.Until(t, "20 refreshes and some watch requests", 20*time.Second, func() bool {
		select {
		case <-ch:
			if _, err := r.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			snapshots++
		default:
		}
		_, deltas := reads.counts()
		return snapshots >= 20 && deltas >= 25
	})
	cancel()
	full, deltas := reads.counts()
	perDelta := reads.deltaBytes.Load() / int64(deltas-deltas0)
	if full != full0 {
		t.Fatalf("an idle console read the instances whole %d more times in %d refreshes", full-full0, snapshots)
	}
	// {"items":[],"removed":[],"generation":N,"latest":N,"items_available":3}
	// is about 100 bytes; one instance is more than 200.
	if perDelta > 200 {
		t.Fatalf("an idle console's reads of instance changes average %d bytes: something was sent", perDelta)
	}
	t.Logf("%d refreshes: %d reads of instance changes, %d bytes each on average; %d whole reads (the first)", snapshots, deltas, perDelta, full)
}

// The instance watch wakes the console when an instance changes, long
// before the refresh ticker would.
func TestRemoteWatchWakesOnInstanceChange(t *testing.T) {
	e, r, _ := newRemoteEnv(t)
	r.Refresh = time.Hour
	id := e.submit("a", -1, 1)
	e.until("a running", 60, func() bool { return e.container(id).State == queue.Running })
	inst := e.container(id).InstanceID
	if _, err := r.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Changes(ctx)
	if _, err := e.eng.ApplyInstanceVerb(inst, view.InstanceDrain, "test", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatal("no change signalled within 20 s of a drain (the ticker is an hour)")
	}
}
