package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// outputSink records what the pool hands to OnLogs and OnLogsLost; fail
// makes storing fail (a full disk).
type outputSink struct {
	h *harness

	mu       sync.Mutex
	fail     error
	stored   map[string]string
	dropped  map[string]int64     // batch only: what max_output cut
	started  map[string]time.Time // batch only: when the stored run started
	attempts map[string]int
	lost     map[string]string
	// destroysAtStore: how many destroys had happened when each output
	// was stored.
	destroysAtStore map[string]int32
	// batch: the pool gets OnLogsBatch too, and batches records the
	// size of each call.
	batch   bool
	batches []int
	// hold, when set, holds the first OnLogsBatch call, after a send on
	// held, until it is closed.
	hold, held chan struct{}
}

// newSinkHarness returns a harness whose pool hands output to a sink,
// after its first step.
func newSinkHarness(t *testing.T, o hopt) (*harness, *outputSink) {
	return newSinkHarnessMode(t, o, false)
}

// newSinkHarnessMode is newSinkHarness; with batch, forget batches hand
// their outputs to OnLogsBatch.
func newSinkHarnessMode(t *testing.T, o hopt, batch bool) (*harness, *outputSink) {
	s := &outputSink{stored: map[string]string{}, dropped: map[string]int64{}, started: map[string]time.Time{}, attempts: map[string]int{}, lost: map[string]string{}, destroysAtStore: map[string]int32{}, batch: batch}
	more := o.pool
	o.pool = func(opts *Options) {
		s.options(opts)
		if more != nil {
			more(opts)
		}
	}
	h := newHarness(t, o)
	s.h = h
	h.step()
	return h, s
}

func (s *outputSink) options(o *Options) {
	store := func(id string, out []byte) error {
		s.attempts[id]++
		if s.fail != nil {
			return s.fail
		}
		s.stored[id] = string(out)
		s.destroysAtStore[id] = s.h.set.destroys.Load()
		return nil
	}
	o.OnLogsBatch = oneByOne(func(id string, out []byte) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return store(id, out)
	})
	if s.batch {
		first := true
		o.OnLogsBatch = func(ids []string, outs []runner.Output) []error {
			if first && s.hold != nil {
				first = false
				s.held <- struct{}{}
				<-s.hold
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.batches = append(s.batches, len(ids))
			errs := make([]error, len(ids))
			for i, id := range ids {
				errs[i] = store(id, outs[i].Data)
				if errs[i] == nil {
					s.dropped[id] = outs[i].Dropped
					s.started[id] = outs[i].Started
				}
			}
			return errs
		}
	}
	o.OnLogsLost = func(id, why string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lost[id] = why
	}
}

func (s *outputSink) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *outputSink) get(id string) (stored string, ok bool, attempts int, lost string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok = s.stored[id]
	return stored, ok, s.attempts[id], s.lost[id]
}

// exitedOn starts a container that exits at once on inst and waits until
// the runner's list reports it exited.
func exitedOn(h *harness, inst cloud.InstanceID, cid string) {
	h.t.Helper()
	if err := h.pool.StartContainer(inst, spec(cid, fake.Cmd(time.Second, 3)...)); err != nil {
		h.t.Fatal(err)
	}
	h.until(cid+" exited", time.Minute, func() bool {
		v, _ := h.pool.Instance(inst)
		i := findStatus(v.Reported, cid)
		return i >= 0 && v.Reported[i].State == runner.StateExited
	})
}

func listed(h *harness, inst cloud.InstanceID, cid string) bool {
	return slices.ContainsFunc(h.drv.Containers(inst), func(st runner.Status) bool { return st.ID == cid })
}

// Whatever the reason of a shutdown, the output of the instance's exited
// containers is stored before the destroy.
func TestShutdownStoresOutputBeforeTheDestroy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown func(h *harness, id cloud.InstanceID)
	}{
		{"the scheduler's shutdown", func(h *harness, id cloud.InstanceID) {
			if !h.pool.Shutdown(id, "at quota: idle and not needed by the queue") {
				h.t.Fatal("shutdown refused")
			}
		}},
		{"drain", func(h *harness, id cloud.InstanceID) {
			if _, err := h.pool.SetIdleBehavior(id, IdleDrain); err != nil {
				h.t.Fatal(err)
			}
			h.step()
		}},
		{"operator kill", func(h *harness, id cloud.InstanceID) {
			if _, err := h.pool.KillInstance(id, "test"); err != nil {
				h.t.Fatal(err)
			}
		}},
		{"forget in flight", func(h *harness, id cloud.InstanceID) {
			h.pool.ForgetContainer(id, "c1")
			if !h.pool.Shutdown(id, "test") {
				h.t.Fatal("shutdown refused")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, sink := newSinkHarness(t, hopt{})
			id := h.createIdle("small")
			exitedOn(h, id, "c1")
			tc.shutdown(h, id)
			h.until("destroyed", time.Minute, func() bool { return h.set.destroys.Load() > 0 })
			out, ok, _, lost := sink.get("c1")
			if !ok || !strings.Contains(out, "exited 3") || lost != "" {
				t.Fatalf("output %q (stored %v, lost %q), want it stored", out, ok, lost)
			}
			if d := sink.destroysAtStore["c1"]; d != 0 {
				t.Fatalf("output stored after %d destroys", d)
			}
		})
	}
}

// Output that cannot be stored stays on the runner (no forget), is not
// fetched again on every pass, and is stored and forgotten once the store
// works again.
func TestOutputNotStoredIsNotForgotten(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) { testOutputNotStoredIsNotForgotten(t, batch) })
	}
}

func testOutputNotStoredIsNotForgotten(t *testing.T, batch bool) {
	h, sink := newSinkHarnessMode(t, hopt{}, batch)
	id := h.createIdle("small")
	exitedOn(h, id, "c1")
	sink.setFail(errors.New("no space left on device"))
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if !listed(h, id, "c1") {
		t.Fatal("the runner forgot a container whose output was not stored")
	}
	if v, _ := h.pool.Instance(id); findStatus(v.Reported, "c1") < 0 {
		t.Fatal("dropped from Reported although not forgotten")
	}
	// The scheduler asks again every pass: not fetched again at once.
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if _, _, n, _ := sink.get("c1"); n != 1 {
		t.Fatalf("%d store attempts right after a failure, want 1", n)
	}
	sink.setFail(nil)
	h.until("forgotten", time.Minute, func() bool {
		h.pool.ForgetContainer(id, "c1")
		h.pool.Wait()
		return !listed(h, id, "c1")
	})
	if out, ok, _, _ := sink.get("c1"); !ok || !strings.Contains(out, "exited 3") {
		t.Fatalf("output %q, stored %v", out, ok)
	}
	if batch && len(sink.batches) != 2 {
		t.Fatalf("OnLogsBatch calls %v, want 2 (the failed one and the retry)", sink.batches)
	}
}

// With OnLogsBatch, the outputs of a forget batch are stored in one call:
// the forgets asked while one batch is under way go together in the next.
func TestForgetBatchStoresOutputsTogether(t *testing.T) {
	h, sink := newSinkHarnessMode(t, hopt{}, true)
	sink.hold, sink.held = make(chan struct{}), make(chan struct{})
	id := h.createIdle("small")
	ids := []string{"c1", "c2", "c3", "c4"}
	for _, c := range ids {
		exitedOn(h, id, c)
	}
	h.pool.ForgetContainer(id, ids[0])
	<-sink.held // c1's batch is storing: the others queue behind it
	for _, c := range ids[1:] {
		h.pool.ForgetContainer(id, c)
	}
	close(sink.hold)
	h.pool.Wait()
	if !slices.Equal(sink.batches, []int{1, 3}) {
		t.Fatalf("OnLogsBatch calls of %v containers, want [1 3]", sink.batches)
	}
	for _, c := range ids {
		if out, ok, n, _ := sink.get(c); !ok || n != 1 || !strings.Contains(out, "exited 3") {
			t.Fatalf("%s: output %q stored %v after %d attempts", c, out, ok, n)
		}
		if listed(h, id, c) {
			t.Fatalf("%s stored but not forgotten", c)
		}
	}
}

// Each output handed over to be stored says when its run started, as its
// runner listed it, through a forget and through a shutdown's collect: the
// store tells one attempt's run from another's by it.
func TestStoredOutputSaysWhenItsRunStarted(t *testing.T) {
	h, sink := newSinkHarnessMode(t, hopt{}, true)
	id := h.createIdle("small")
	listedStart := func(cid string) time.Time {
		for _, st := range h.drv.Containers(id) {
			if st.ID == cid {
				return st.StartedAt
			}
		}
		t.Fatalf("%s not listed on %s", cid, id)
		return time.Time{}
	}
	exitedOn(h, id, "c1")
	h.clk.Advance(time.Minute)
	exitedOn(h, id, "c2")
	want := map[string]time.Time{"c1": listedStart("c1"), "c2": listedStart("c2")}
	if want["c1"].IsZero() || want["c1"].Equal(want["c2"]) {
		t.Fatalf("setup: runs started at %v", want)
	}
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if !h.pool.Shutdown(id, "test") {
		t.Fatal("shutdown refused")
	}
	h.until("destroyed", time.Minute, func() bool { return h.set.destroys.Load() > 0 })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for cid, at := range want {
		if got := sink.started[cid]; !got.Equal(at) {
			t.Errorf("%s's output stored with its run started at %v, want %v (as listed)", cid, got, at)
		}
	}
}

// A shutdown waits for a failing store only until timeout_shutdown, then
// reports the output lost and destroys the instance.
func TestShutdownGivesUpOnAFailingStoreAfterTimeoutShutdown(t *testing.T) {
	h, sink := newSinkHarness(t, hopt{cfg: func(c *config.Config) { c.Cloud.TimeoutShutdown = 10 * time.Second }})
	id := h.createIdle("small")
	exitedOn(h, id, "c1")
	sink.setFail(errors.New("no space left on device"))
	start := h.clk.Now()
	if _, err := h.pool.KillInstance(id, "test"); err != nil {
		t.Fatal(err)
	}
	h.until("destroyed", time.Minute, func() bool { return h.set.destroys.Load() > 0 })
	if waited := h.clk.Now().Sub(start); waited < 10*time.Second {
		t.Errorf("destroyed after %s, before timeout_shutdown", waited)
	}
	_, _, n, lost := sink.get("c1")
	if n < 2 || !strings.Contains(lost, "before its output could be stored") || !strings.Contains(lost, "no space left on device") {
		t.Fatalf("%d attempts, lost %q", n, lost)
	}
}

// An instance that cannot be reached is not kept waiting for output it
// cannot give: the output is reported lost, with why, and it is destroyed.
func TestShutdownOfAnUnreachableInstanceReportsOutputLost(t *testing.T) {
	h, sink := newSinkHarness(t, hopt{})
	id := h.createIdle("small")
	exitedOn(h, id, "c1")
	h.drv.Break(id)
	h.until("probe failing", time.Minute, func() bool { v, _ := h.pool.Instance(id); return v.ProbeFailing })
	if _, err := h.pool.KillInstance(id, "test"); err != nil {
		t.Fatal(err)
	}
	h.step()
	if h.set.destroys.Load() == 0 {
		t.Fatal("not destroyed at once")
	}
	if _, ok, _, lost := sink.get("c1"); ok || !strings.Contains(lost, "while unreachable") {
		t.Fatalf("stored %v, lost %q", ok, lost)
	}
}

// batchRecorder wraps an instance's executor and records the requests of
// each "runner batch" it carries; while gate is set, the first batch call
// waits for it to be closed.
type batchRecorder struct {
	runner.Executor
	sink *outputSink

	mu    sync.Mutex
	calls [][]runner.Request
	// storedAtForget: for each container forgotten, whether its output
	// was stored when the forget was sent.
	storedAtForget map[string]bool
	gate, gated    chan struct{}
}

func (r *batchRecorder) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if !strings.Contains(cmd, " batch") {
		return r.Executor.Execute(ctx, cmd, stdin)
	}
	var reqs []runner.Request
	for _, line := range strings.Split(strings.TrimSpace(string(stdin)), "\n") {
		var req runner.Request
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			return nil, nil, err
		}
		reqs = append(reqs, req)
	}
	r.mu.Lock()
	first := len(r.calls) == 0
	r.calls = append(r.calls, reqs)
	for _, req := range reqs {
		if req.Verb == "forget" {
			_, ok, _, _ := r.sink.get(req.ID)
			r.storedAtForget[req.ID] = ok
		}
	}
	gate := r.gate
	r.mu.Unlock()
	if first && gate != nil {
		r.gated <- struct{}{}
		<-gate
	}
	return r.Executor.Execute(ctx, cmd, stdin)
}

// callsSoFar returns the batch calls as "verb:id,id verb:id" strings.
func (r *batchRecorder) callsSoFar() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, reqs := range r.calls {
		var parts []string
		for _, req := range reqs {
			if n := len(parts); n > 0 && strings.HasPrefix(parts[n-1], req.Verb+":") {
				parts[n-1] += "," + req.ID
			} else {
				parts = append(parts, req.Verb+":"+req.ID)
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// While one forget batch's outputs are being stored, the next batch's
// outputs are fetched; a container is forgotten only after its output is
// stored, in the call after.
func TestForgetFetchesTheNextBatchWhileOneIsStored(t *testing.T) {
	rec := &batchRecorder{storedAtForget: map[string]bool{}}
	h, sink := newSinkHarnessMode(t, hopt{pool: func(o *Options) {
		next := o.NewExecutor
		o.NewExecutor = func(i cloud.Instance) (runner.Executor, error) {
			e, err := next(i)
			if err != nil {
				return nil, err
			}
			rec.Executor = e
			return rec, nil
		}
	}}, true)
	rec.sink = sink
	id := h.createIdle("small")
	for _, c := range []string{"c1", "c2", "c3"} {
		exitedOn(h, id, c)
	}
	rec.mu.Lock()
	rec.calls = nil
	rec.gate, rec.gated = make(chan struct{}), make(chan struct{})
	rec.mu.Unlock()
	sink.hold, sink.held = make(chan struct{}), make(chan struct{})

	h.pool.ForgetContainer(id, "c1")
	<-rec.gated // c1's output is being fetched: the others queue
	h.pool.ForgetContainer(id, "c2")
	h.pool.ForgetContainer(id, "c3")
	close(rec.gate)
	<-sink.held // c1's output is being stored
	deadline := time.Now().Add(wait.Budget(10 * time.Second))
	for len(rec.callsSoFar()) < 2 {
		if time.Now().After(deadline) {
			close(sink.hold)
			t.Fatalf("the next batch's outputs were not fetched while c1's was stored: calls %q", rec.callsSoFar())
		}
		time.Sleep(time.Millisecond)
	}
	close(sink.hold)
	h.pool.Wait()
	want := []string{"logs:c1", "logs:c2,c3", "forget:c1", "forget:c2,c3"}
	if got := rec.callsSoFar(); !slices.Equal(got, want) {
		t.Fatalf("runner batch calls %q, want %q", got, want)
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if !rec.storedAtForget[c] {
			t.Fatalf("%s forgotten before its output was stored", c)
		}
		if listed(h, id, c) {
			t.Fatalf("%s not forgotten", c)
		}
	}
}

// oneByOne is an OnLogsBatch that stores each output in turn with store.
func oneByOne(store func(id string, out []byte) error) func([]string, []runner.Output) []error {
	return func(ids []string, outs []runner.Output) []error {
		errs := make([]error, len(ids))
		for i, id := range ids {
			errs[i] = store(id, outs[i].Data)
		}
		return errs
	}
}

// An idle instance whose probes fail is not shut down for being idle: its
// exited containers' output, not stored yet, could not be fetched, and a
// shutdown would record it lost at once (seen in an HA soak: a host cut
// off for a few seconds was shut down "idle for 3s" and six outputs lost).
// Once the host answers, it is shut down as usual, the output stored
// first.
func TestIdleShutdownWaitsForAnUnreachableHost(t *testing.T) {
	h, sink := newSinkHarness(t, hopt{cfg: func(c *config.Config) {
		c.Cloud.TimeoutIdle = 20 * time.Second
		c.Cloud.ProbeInterval = 2 * time.Second
		c.Cloud.TimeoutProbe = time.Hour // this test is not about the probe timeout
	}})
	id := h.createIdle("small")
	exitedOn(h, id, "c1")
	h.drv.Break(id)
	h.until("probes failing", 15*time.Second, func() bool {
		v, _ := h.pool.Instance(id)
		return v.ProbeFailing
	})
	h.run(time.Minute) // three idle timeouts
	if st := h.state(id); st == StateShutdown || st == "" || h.set.destroys.Load() > 0 {
		_, _, _, lost := sink.get("c1")
		t.Fatalf("idle and unreachable for a minute: state %q, %d destroys, c1's output lost %q; want kept until it answers", st, h.set.destroys.Load(), lost)
	}
	h.drv.Unbreak(id)
	h.until("destroyed once it answers", 2*time.Minute, func() bool { return h.set.destroys.Load() > 0 })
	out, ok, _, lost := sink.get("c1")
	if !ok || !strings.Contains(out, "exited 3") || lost != "" {
		t.Fatalf("output %q (stored %v, lost %q), want it stored before the idle shutdown", out, ok, lost)
	}
}
