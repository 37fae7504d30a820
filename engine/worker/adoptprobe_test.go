package worker

// The adopt probe after a restart or a takeover: the runner's version and
// its list in one batch over a serve session, the long way (ensureRunner,
// then a list) only when that runner is not the one wanted.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// servingExec gives an in-memory runner serve sessions: each exchange is
// the frame run as "runner batch", as "runner serve" runs it. It records
// the verb of every command line run as a process of its own.
type servingExec struct {
	runner.Executor
	mu        *sync.Mutex
	processes *[]string
}

func (s servingExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	s.mu.Lock()
	if _, rest, ok := strings.Cut(cmd, " runner "); ok {
		verb, _, _ := strings.Cut(rest, " ")
		*s.processes = append(*s.processes, verb)
	}
	s.mu.Unlock()
	return s.Executor.Execute(ctx, cmd, stdin)
}

func (s servingExec) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	base, ok := strings.CutSuffix(cmd, " runner serve")
	if !ok {
		return nil, runner.NotSent(&runner.ExitError{Code: 2, Stderr: "not a serve line: " + cmd})
	}
	out, _, err := s.Executor.Execute(ctx, base+" runner batch", bytes.TrimSuffix(frame, []byte("\n")))
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// adoptedBusy is a harness whose first pool made an idle instance and
// started a long container on it, then stopped: its successor (the
// caller's newPool) finds the instance in the listing and adopts it.
func adoptedBusy(t *testing.T, o hopt) (*harness, cloud.InstanceID) {
	t.Helper()
	h := newHarness(t, o)
	h.step()
	id := h.createIdle("small")
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(time.Hour, 0)...)); err != nil {
		t.Fatal(err)
	}
	h.until("c1 running on "+string(id), time.Minute, func() bool {
		v, _ := h.pool.Instance(id)
		st, ok := reported(v, "c1")
		return ok && st.State == runner.StateRunning
	})
	h.pool.Stop()
	return h, id
}

// servingPool replaces h's pool with a new one (epoch 2, a takeover's)
// whose executors keep serve sessions, with mod applied; it returns the
// verbs run as processes of their own.
func servingPool(h *harness, mod func(*Options)) func() []string {
	var mu sync.Mutex
	var processes []string
	h.pool = h.newPool(func(o *Options) {
		o.Epoch = 2
		o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
			e, err := h.drv.Executor(inst)
			if err != nil {
				return nil, err
			}
			return servingExec{Executor: e, mu: &mu, processes: &processes}, nil
		}
		if mod != nil {
			mod(o)
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(processes)
	}
}

// TestAdoptProbeIsOneBatch: the adopted instance's runner is the wanted
// one, so its probe is one exchange on a serve session (version and list
// together): no "runner version" process before it, and the instance is
// ready with its container listed.
func TestAdoptProbeIsOneBatch(t *testing.T) {
	h, id := adoptedBusy(t, hopt{})
	processes := servingPool(h, nil)
	h.until(string(id)+" adopted", time.Minute, func() bool { return h.pool.Ready() && h.state(id) == StateRunning })
	if v, _ := h.pool.Instance(id); !slices.Contains(v.Containers, "c1") {
		t.Fatalf("c1 not listed on the adopted %s: %s", id, h.dump())
	}
	if ps := processes(); len(ps) != 0 {
		t.Fatalf("the adopt probe ran %q as processes of their own, want none (version and list in one batch on the serve session)", ps)
	}
	if n := h.pool.Stats().RunnerDeploys; n != 0 {
		t.Fatalf("%d runner deploys on an instance whose runner is the wanted one", n)
	}
}

// TestAdoptProbeInstallsAnotherRunner: an adopted instance whose runner
// reports another hash (the dispatcher was upgraded) gets the wanted one
// installed, and is listed by it, as before the batch.
func TestAdoptProbeInstallsAnotherRunner(t *testing.T) {
	h, id := adoptedBusy(t, hopt{})
	v2 := []byte("dispatch-tui runner binary v2")
	sum := sha256.Sum256(v2)
	servingPool(h, func(o *Options) {
		o.RunnerHash = hex.EncodeToString(sum[:])
		o.RunnerBinary = func() ([]byte, error) { return v2, nil }
	})
	h.until(string(id)+" adopted", time.Minute, func() bool { return h.pool.Ready() && h.state(id) == StateRunning })
	if v, _ := h.pool.Instance(id); !slices.Contains(v.Containers, "c1") {
		t.Fatalf("c1 not listed on the adopted %s: %s", id, h.dump())
	}
	if n := h.pool.Stats().RunnerDeploys; n != 1 {
		t.Fatalf("%d runner deploys, want 1 (the runner reported another hash)", n)
	}
}

// TestAdoptProbeFencedByANewerLeader: a runner that has seen a newer
// epoch refuses the probe of a deposed leader, with or without serve
// sessions; the probe says so and installs nothing over it.
func TestAdoptProbeFencedByANewerLeader(t *testing.T) {
	for _, sessions := range []bool{true, false} {
		t.Run(fmt.Sprintf("sessions=%v", sessions), func(t *testing.T) {
			h, id := adoptedBusy(t, hopt{})
			servingPool(h, func(o *Options) { o.Epoch = 3 })
			h.until(string(id)+" adopted at epoch 3", time.Minute, func() bool { return h.pool.Ready() && h.state(id) == StateRunning })
			h.pool.Stop()
			var fenced atomic.Int32
			deposed := func(o *Options) { o.OnFenced = func(error) { fenced.Add(1) } } // epoch 2
			if sessions {
				servingPool(h, deposed)
			} else {
				h.pool = h.newPool(func(o *Options) { o.Epoch = 2; deposed(o) })
			}
			h.until(string(id)+"'s probe refused", time.Minute, func() bool {
				v, _ := h.pool.Instance(id)
				return strings.Contains(v.LastError, "epoch")
			})
			if n := h.pool.Stats().RunnerDeploys; n != 0 {
				t.Fatalf("%d runner deploys on a runner that refused an old epoch", n)
			}
			if h.state(id) != StateUnknown {
				t.Fatalf("%s is %s after its runner refused the probe's epoch, want unknown", id, h.state(id))
			}
			if fenced.Load() == 0 {
				t.Fatal("no fence reported")
			}
		})
	}
}

// TestAdoptedInstanceWatchesAsItsProbeEnds: the watch of an adopted
// instance is opened with its probe, so a start made once the probe has
// adopted it waits for no further step and no watch opened after it.
func TestAdoptedInstanceWatchesAsItsProbeEnds(t *testing.T) {
	h, id := adoptedBusy(t, hopt{drv: func(o *fake.Options) { o.ExitNotices = true }})
	h.pool = h.newPool(func(o *Options) { o.Epoch = 2 })
	h.step() // the listing finds the instance
	h.step() // its adopt probe
	if st := h.state(id); st != StateRunning {
		t.Fatalf("%s is %s after its adopt probe, want running: %s", id, st, h.dump())
	}
	// No step from here on: the watch must be ready without one.
	wait.Until(t, "the watch on the adopted "+string(id)+" ready without another step", 20*time.Second, func() bool { return h.watching(id) })
	if err := h.pool.StartContainer(id, spec("c2", fake.Cmd(time.Hour, 0)...)); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	if n := h.pool.Stats().Starts; n != 1 {
		t.Fatalf("%d starts sent right after the adopt, want 1 (not held: the watch is ready)", n)
	}
}
