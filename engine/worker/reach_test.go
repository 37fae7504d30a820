package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

// netGate stands between the pool and the fake driver's runner like a network:
// while cut, a call waits until the cut heals or its context ends (a dead
// TCP connection answers nothing and closes nothing); while failing, every
// call fails with failErr.
type netGate struct {
	mu      sync.Mutex
	cut     chan struct{} // non-nil while cut; closed by heal
	failErr error
	blocked chan struct{} // a value for each call that starts waiting
}

func newNetGate() *netGate { return &netGate{blocked: make(chan struct{}, 1000)} }

func (g *netGate) setCut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = make(chan struct{})
}

func (g *netGate) heal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut != nil {
		close(g.cut)
		g.cut = nil
	}
	g.failErr = nil
}

func (g *netGate) setFail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failErr = err
}

// waitBlocked waits (in real time) until a call is held by the cut.
func (g *netGate) waitBlocked(t *testing.T) {
	t.Helper()
	select {
	case <-g.blocked:
	case <-time.After(wait.Budget(10 * time.Second)):
		t.Fatal("no call reached the cut network")
	}
}

// wrap is an Options modifier routing every executor through g.
func (g *netGate) wrap(o *Options) {
	inner := o.NewExecutor
	o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
		e, err := inner(inst)
		if err != nil {
			return nil, err
		}
		return &gatedExec{Executor: e, g: g}, nil
	}
}

type gatedExec struct {
	runner.Executor
	g *netGate
}

func (e *gatedExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	e.g.mu.Lock()
	cut, failErr := e.g.cut, e.g.failErr
	e.g.mu.Unlock()
	if failErr != nil {
		return nil, nil, runner.NotSent(failErr)
	}
	if cut != nil {
		e.g.blocked <- struct{}{}
		select {
		case <-cut:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return e.Executor.Execute(ctx, cmd, stdin)
}

func (h *harness) eventsOf(id cloud.InstanceID, kind string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.events {
		if e.Instance == id && e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) view(id cloud.InstanceID) InstanceView {
	h.t.Helper()
	v, ok := h.pool.Instance(id)
	if !ok {
		h.t.Fatalf("%s not in the pool: %s", id, h.dump())
	}
	return v
}

// A probe on a connection that answers nothing is counted as failed at its
// call deadline, not when the call returns: the instance shows as
// unreachable within probe_interval + timeout_runner_call of the cut, with
// one event, and as reachable again, with one event, after the heal.
func TestUnreachableShownAtTheCallDeadline(t *testing.T) {
	const interval, callTimeout = time.Second, 5 * time.Second
	g := newNetGate()
	h := newHarness(t, hopt{
		cfg: func(c *config.Config) {
			c.Cloud.ProbeInterval = interval
			c.Cloud.TimeoutRunnerCall = callTimeout
		},
		pool: g.wrap,
	})
	h.step()
	id := h.createIdle("small")
	if v := h.view(id); !v.UnreachableSince.IsZero() || v.ProbeFailing {
		t.Fatalf("reachable instance shown unreachable: %+v", v)
	}

	g.setCut()
	cut := h.clk.Now()
	// Step once a second, never waiting for the pool's goroutines: the
	// probe in flight does not return until Step gives up on it.
	h.clk.Advance(interval)
	h.pool.Step()
	g.waitBlocked(t)
	probeStart := h.clk.Now()
	for h.view(id).UnreachableSince.IsZero() {
		if h.clk.Now().Sub(cut) >= interval+callTimeout {
			t.Fatalf("still not unreachable %s after the cut: %+v", h.clk.Now().Sub(cut), h.view(id))
		}
		h.clk.Advance(time.Second)
		h.pool.Step()
	}
	detected := h.clk.Now()
	if d := detected.Sub(cut); d > interval+callTimeout {
		t.Fatalf("unreachable shown %s after the cut, want within %s", d, interval+callTimeout)
	}
	v := h.view(id)
	if !v.UnreachableSince.Equal(probeStart) || !v.ProbeFailing ||
		!strings.Contains(v.LastError, fmt.Sprintf("runner list: no answer within %s", callTimeout)) {
		t.Fatalf("view after the deadline: since=%v (want %v) failing=%v err=%q",
			v.UnreachableSince, probeStart, v.ProbeFailing, v.LastError)
	}
	h.pool.Wait() // the overdue probe was canceled and returns

	// The cut lasts: more probes time out, no more events.
	for i := 0; i < 3*int(callTimeout/time.Second); i++ {
		h.clk.Advance(time.Second)
		h.pool.Step()
	}
	if h.view(id).State == StateShutdown {
		t.Fatalf("shut down during a cut shorter than timeout_probe: %s", h.dump())
	}

	g.heal()
	h.until("reachable again", time.Minute, func() bool { return h.view(id).UnreachableSince.IsZero() })
	v = h.view(id)
	if v.ProbeFailing || v.LastError != "" || v.State != StateIdle {
		t.Fatalf("after the heal: %+v", v)
	}
	errs, oks := h.eventsOf(id, EventProbeError), h.eventsOf(id, EventProbeOK)
	if len(errs) != 1 || len(oks) != 1 {
		t.Fatalf("want one %s and one %s event, got %+v and %+v", EventProbeError, EventProbeOK, errs, oks)
	}
	if !errs[0].Time.Equal(detected) || !strings.Contains(errs[0].Message, "unreachable since "+probeStart.Format(time.TimeOnly)) {
		t.Fatalf("%s event: %+v (detected at %v)", EventProbeError, errs[0], detected)
	}
	if !strings.Contains(oks[0].Message, "reachable again") {
		t.Fatalf("%s event: %+v", EventProbeOK, oks[0])
	}
}

// A refused host key is an event and the last error at once, also while
// the instance is booting (when failed probes are otherwise expected), and
// only once however often it is refused.
func TestHostKeyRefusalIsAnEvent(t *testing.T) {
	g := newNetGate()
	h := newHarness(t, hopt{pool: g.wrap})
	h.step()
	hkErr := fmt.Errorf("ssh 10.0.0.9:22: %w: key mismatch", sshexec.ErrHostKey)
	g.setFail(hkErr)
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	id := h.pool.Instances(nil)[0].ID
	h.run(30 * time.Second)
	v := h.view(id)
	if v.State != StateBooting || !strings.Contains(v.LastError, "host key verification failed") {
		t.Fatalf("want booting with the host key error, got %+v", v)
	}
	evs := h.eventsOf(id, EventProbeError)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "host key refused") {
		t.Fatalf("want one host key event, got %+v", evs)
	}
	g.heal()
	h.until("idle", time.Minute, func() bool { return h.state(id) == StateIdle })
	if v := h.view(id); v.LastError != "" || !v.UnreachableSince.IsZero() {
		t.Fatalf("after the key is accepted: %+v", v)
	}
}
