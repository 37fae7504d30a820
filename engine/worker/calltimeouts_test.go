package worker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
)

// ctxSpy keeps the context and command of every call the pool makes on an
// instance.
type ctxSpy struct {
	mu   sync.Mutex
	ctxs []context.Context
	cmds []string
}

func (s *ctxSpy) wrap(o *Options) {
	inner := o.NewExecutor
	o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
		e, err := inner(inst)
		if err != nil {
			return nil, err
		}
		return &spiedExec{Executor: e, s: s}, nil
	}
}

func (s *ctxSpy) since(n int) []context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]context.Context(nil), s.ctxs[n:]...)
}

func (s *ctxSpy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ctxs)
}

type spiedExec struct {
	runner.Executor
	s *ctxSpy
}

func (e *spiedExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	e.s.mu.Lock()
	e.s.ctxs = append(e.s.ctxs, ctx)
	e.s.cmds = append(e.s.cmds, cmd)
	e.s.mu.Unlock()
	return e.Executor.Execute(ctx, cmd, stdin)
}

// A probe's runner call has one deadline, timeout_runner_call on the
// pool's clock: it carries none in real time, is still running a moment
// before that deadline, and is cut by the Step at it.
func TestProbeCallDeadlineIsThePoolClocks(t *testing.T) {
	const interval, callTimeout = time.Second, 5 * time.Second
	g := newNetGate()
	spy := &ctxSpy{}
	h := newHarness(t, hopt{
		cfg: func(c *config.Config) {
			c.Cloud.ProbeInterval = interval
			c.Cloud.TimeoutRunnerCall = callTimeout
		},
		pool: func(o *Options) { g.wrap(o); spy.wrap(o) },
	})
	h.step()
	id := h.createIdle("small")

	g.setCut()
	before := spy.count()
	h.clk.Advance(interval)
	h.pool.Step()
	g.waitBlocked(t)
	callStart := h.clk.Now()
	calls := spy.since(before)
	if len(calls) != 1 {
		t.Fatalf("%d calls on the instance after the cut, want the probe's one", len(calls))
	}
	ctx := calls[0]
	if d, ok := ctx.Deadline(); ok {
		t.Fatalf("the probe's call has a deadline in real time (%s from now) besides the pool clock's", time.Until(d).Round(time.Millisecond))
	}

	h.clk.Set(callStart.Add(callTimeout - time.Nanosecond))
	h.pool.Step()
	if err := ctx.Err(); err != nil {
		t.Fatalf("call cut before its deadline on the pool's clock: %v", err)
	}
	if v := h.view(id); v.ProbeFailing {
		t.Fatalf("probe counted failed before its deadline: %+v", v)
	}

	h.clk.Set(callStart.Add(callTimeout))
	h.pool.Step()
	if ctx.Err() == nil {
		t.Fatal("call still running after the Step at its deadline on the pool's clock")
	}
	if v := h.view(id); !v.ProbeFailing || !strings.Contains(v.LastError, "runner list: no answer within 5s") {
		t.Fatalf("after the deadline: failing=%v err=%q, want the probe failed at its deadline", v.ProbeFailing, v.LastError)
	}
	g.heal()
	h.pool.Wait()
}

// A start batch, a call with no deadline of its own, gets the slow limit,
// max(timeout_runner_call, 1m), on the pool's clock and none in real time:
// it is cut by the Step at that limit.
func TestStartCallDeadlineIsThePoolClocks(t *testing.T) {
	g := newNetGate()
	spy := &ctxSpy{}
	h := newHarness(t, hopt{
		pool: func(o *Options) { g.wrap(o); spy.wrap(o) },
	})
	h.step()
	id := h.createIdle("small")
	slow := CallTimeoutsOf(&h.cfg.Cloud).Slow

	g.setCut()
	before := spy.count()
	if err := h.pool.StartContainer(id, runner.Spec{ID: "c1", Command: fake.Cmd(0, 0)}); err != nil {
		t.Fatal(err)
	}
	g.waitBlocked(t)
	callStart := h.clk.Now()
	calls := spy.since(before)
	if len(calls) != 1 {
		t.Fatalf("%d calls on the instance after the cut, want the start batch", len(calls))
	}
	ctx := calls[0]
	if d, ok := ctx.Deadline(); ok {
		t.Fatalf("the start call has a deadline in real time (%s from now)", time.Until(d).Round(time.Second))
	}

	h.clk.Set(callStart.Add(slow - time.Nanosecond))
	h.pool.Step()
	if err := ctx.Err(); err != nil {
		t.Fatalf("start call cut before its deadline on the pool's clock: %v", err)
	}
	h.clk.Set(callStart.Add(slow))
	h.pool.Step()
	if ctx.Err() == nil || context.Cause(ctx) != errPastDeadline {
		t.Fatalf("start call after the Step at its deadline on the pool's clock: %v (cause %v), want it cut there", ctx.Err(), context.Cause(ctx))
	}
	// A probe those Steps started waits at the cut too: heal it, so that
	// every call returns.
	g.heal()
	h.pool.Wait()
	if n := h.pool.calls.inFlight(); n != 0 {
		t.Fatalf("%d calls still watched after every call returned", n)
	}
}
