package worker

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// noticeHarness is a pool on an in-memory cloud whose runners announce
// exits (with the fake clock, when the test calls AnnounceExits), with one
// idle instance whose watch is ready.
func noticeHarness(t *testing.T) (*harness, cloud.InstanceID) {
	t.Helper()
	h := newHarness(t, hopt{drv: func(o *fake.Options) { o.ExitNotices = true }})
	h.step()
	id := h.createIdle("small")
	h.pool.Step() // opens the watch
	wait.Until(t, "the watch on "+string(id)+" ready", 20*time.Second, func() bool {
		h.pool.mu.Lock()
		defer h.pool.mu.Unlock()
		return h.pool.byID[id].watching
	})
	h.step() // the list a ready watch asks for
	return h, id
}

func reported(v InstanceView, cid string) (runner.Status, bool) {
	if i := findStatus(v.Reported, cid); i >= 0 {
		return v.Reported[i], true
	}
	return runner.Status{}, false
}

func TestExitNoticeRecordedBeforeTheNextProbe(t *testing.T) {
	h, id := noticeHarness(t)
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(2*time.Second, 3)...)); err != nil {
		t.Fatal(err)
	}
	h.step()
	probes := h.pool.Stats().Probes
	h.clk.Advance(2 * time.Second) // the next probe is due 10 s after the last
	h.step()
	if v, _ := h.pool.Instance(id); !slices.Equal(v.Containers, []string{"c1"}) {
		t.Fatalf("before the notice: containers %v, want [c1] (the exit is not known yet)", v.Containers)
	}
	changed := h.pool.Changed()
	for len(changed) > 0 {
		<-changed
	}
	h.drv.AnnounceExits()
	var v InstanceView
	wait.Until(t, "c1's exit applied after its notice", 20*time.Second, func() bool {
		v, _ = h.pool.Instance(id)
		st, ok := reported(v, "c1")
		return ok && st.State == runner.StateExited
	})
	if st, _ := reported(v, "c1"); st.ExitCode != 3 || len(v.Containers) != 0 || v.State != StateIdle {
		t.Fatalf("after the notice: %+v, containers %v, state %s; want c1 exited 3 and the instance idle", st, v.Containers, v.State)
	}
	select {
	case <-changed:
	default:
		t.Fatal("the notice's exit did not signal Changed (the scheduler's next pass waits for it)")
	}
	s := h.pool.Stats()
	if s.Probes != probes || s.ExitNotices != 1 || s.StatusReads != 0 {
		t.Fatalf("probes %d → %d, notices %d, status reads %d; want no probe, one notice and no read (it carries the status)", probes, s.Probes, s.ExitNotices, s.StatusReads)
	}
	// A later list (the probe's) keeps it, and a forget drops it.
	h.clk.Advance(10 * time.Second)
	h.step()
	if v, _ := h.pool.Instance(id); !slices.ContainsFunc(v.Reported, func(st runner.Status) bool { return st.ID == "c1" }) {
		t.Fatalf("the probe's list dropped c1: %+v", v.Reported)
	}
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if v, _ := h.pool.Instance(id); len(v.Reported) != 0 {
		t.Fatalf("after the forget: %+v", v.Reported)
	}
}

func TestExitNoticeLostIsCaughtByTheProbe(t *testing.T) {
	h, id := noticeHarness(t)
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(time.Second, 0)...)); err != nil {
		t.Fatal(err)
	}
	h.step()
	// The runner never announces it (a notice lost with its connection):
	// the probe's list, due probe_interval after the last, reads it.
	h.until("c1 exited in the list", 15*time.Second, func() bool {
		v, _ := h.pool.Instance(id)
		st, ok := reported(v, "c1")
		return ok && st.State == runner.StateExited && len(v.Containers) == 0
	})
	if n := h.pool.Stats().ExitNotices; n != 0 {
		t.Fatalf("%d notices, want none", n)
	}
}

func TestStaleNoticeAfterForgetIgnored(t *testing.T) {
	h, id := noticeHarness(t)
	if err := h.pool.StartContainer(id, spec("c1", "true")); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.clk.Advance(10 * time.Second)
	h.step() // listed exited
	h.pool.mu.Lock()
	w := h.pool.byID[id]
	readSeq := h.pool.nextSeqLocked() // a status read issued now...
	h.pool.mu.Unlock()
	h.pool.ForgetContainer(id, "c1") // ...answered after the forget
	h.pool.Wait()
	h.pool.mu.Lock()
	h.pool.applyReadLocked(w, []runner.Status{{ID: "c1", State: runner.StateExited, PID: 1}}, readSeq)
	rep := slices.Clone(w.v.Reported)
	h.pool.mu.Unlock()
	if len(rep) != 0 {
		t.Fatalf("a status read before the forget brought c1 back: %+v", rep)
	}
}

func TestExitNoticeWithoutStatusReadsIt(t *testing.T) {
	h, id := noticeHarness(t)
	if err := h.pool.StartContainer(id, spec("c1", "false")); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.pool.mu.Lock()
	w := h.pool.byID[id]
	gen := w.watchGen
	h.pool.mu.Unlock()
	h.pool.exitNotice(w, gen, "c1", nil) // a notice with no list line
	h.pool.Wait()
	v, _ := h.pool.Instance(id)
	if st, ok := reported(v, "c1"); !ok || st.State != runner.StateExited || st.ExitCode != 1 || len(v.Containers) != 0 {
		t.Fatalf("after a notice without a status: %+v, containers %v; want c1 read with list c1, exited 1", v.Reported, v.Containers)
	}
	if s := h.pool.Stats(); s.StatusReads != 1 {
		t.Fatalf("%d status reads, want 1", s.StatusReads)
	}
}

// TakeNoticedExits hands the engine's exit step each noticed exit once,
// as the last list shows it, and nothing else the instance reports; Step
// drops what was not taken (the pass after it reads every status).
func TestTakeNoticedExits(t *testing.T) {
	h, id := noticeHarness(t)
	for _, s := range []runner.Spec{spec("c1", fake.Cmd(2*time.Second, 3)...), spec("c2", "run-forever"), spec("c3", fake.Cmd(4*time.Second, 0)...)} {
		if err := h.pool.StartContainer(id, s); err != nil {
			t.Fatal(err)
		}
	}
	h.step()
	if vs := h.pool.TakeNoticedExits(nil); len(vs) != 0 {
		t.Fatalf("before any notice: %+v", vs)
	}
	announce := func(n int) {
		h.drv.AnnounceExits()
		wait.Until(t, fmt.Sprintf("%d exit notices", n), 20*time.Second, func() bool { return h.pool.Stats().ExitNotices == n })
		h.pool.Wait() // the notices' statuses applied
	}
	h.clk.Advance(2 * time.Second)
	announce(1)
	vs := h.pool.TakeNoticedExits(nil)
	if len(vs) != 1 || vs[0].ID != id || len(vs[0].Reported) != 1 || vs[0].Reported[0].ID != "c1" || vs[0].Reported[0].ExitCode != 3 {
		t.Fatalf("after c1's notice: %+v, want %s with c1 exited 3 alone", vs, id)
	}
	if vs := h.pool.TakeNoticedExits(vs); len(vs) != 0 {
		t.Fatalf("taken twice: %+v", vs)
	}
	h.clk.Advance(2 * time.Second)
	announce(2)
	h.pool.Step()
	if vs := h.pool.TakeNoticedExits(nil); len(vs) != 0 {
		t.Fatalf("after a Step, c3's exit is the pass's, yet taken: %+v", vs)
	}
}

// A forget asked for again after the first one ended (a pass that read
// the exit before it ended, written later) sends nothing: the runner holds
// no such container any more.
func TestForgetAgainAfterForgottenSendsNothing(t *testing.T) {
	h, id := noticeHarness(t)
	if err := h.pool.StartContainer(id, spec("c1", "true")); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.drv.AnnounceExits()
	wait.Until(t, "c1's exit notice", 20*time.Second, func() bool { return h.pool.Stats().ExitNotices == 1 })
	h.pool.Wait()
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if v, _ := h.pool.Instance(id); len(v.Reported) != 0 {
		t.Fatalf("after the forget: %+v", v.Reported)
	}
	h.pool.ForgetContainer(id, "c1")
	h.pool.mu.Lock()
	_, sent := h.pool.byID[id].forgetting["c1"]
	h.pool.mu.Unlock()
	h.pool.Wait()
	if sent {
		t.Fatal("a second forget of c1, already forgotten, went to the runner (it fails there with a warning)")
	}
}

// A container's next attempt is not started on an instance whose runner
// still holds its exited earlier attempt: the runner would refuse it, and
// a late read of the old record would pass for the new attempt's exit.
// Once the earlier attempt is forgotten, the start goes out.
func TestNextAttemptWaitsForTheEarlierOnesForget(t *testing.T) {
	h, id := noticeHarness(t)
	if err := h.pool.StartContainer(id, spec("c1", "true")); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.drv.AnnounceExits()
	wait.Until(t, "c1's exit notice", 20*time.Second, func() bool { return h.pool.Stats().ExitNotices == 1 })
	h.pool.Wait()
	if err := h.pool.StartContainer(id, spec("c1", "true")); !errors.Is(err, ErrEarlierAttempt) {
		v, _ := h.pool.Instance(id)
		t.Fatalf("start of c1 again while its runner lists %+v: %v, want ErrEarlierAttempt", v.Reported, err)
	}
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if err := h.pool.StartContainer(id, spec("c1", "true")); err != nil {
		t.Fatalf("start of c1 again after its forget: %v", err)
	}
}
