//go:build linux

package sshhosts

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// Takeovers between daemon nodes of the built binary on one PostgreSQL
// database over the same real sshd hosts (docs/design.md §11).

// TestHAKillLeaderTakesOver: the leader is killed (-9) while containers
// run and more wait; the standby leads within the lease and a retry,
// adopts what runs, starts what waits, and every container ends Complete
// having run exactly as often as its attempts say. HA_TAKEOVERS=N does N
// takeovers, the killed node coming back as the standby each time, and
// logs kill → leads and kill → first start of each (BENCHMARKS.md). At
// the end the leader is stopped with SIGTERM and hands over.
func TestHAKillLeaderTakesOver(t *testing.T) {
	rounds := 1
	if s := os.Getenv("HA_TAKEOVERS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("HA_TAKEOVERS=%q: want a count", s)
		}
	}
	he := newHAEnv(t, 2, 2)
	a, b := he.nodes[0], he.nodes[1]
	a.start()
	he.until(a.name+" to lead", 30*time.Second, a.leads)
	b.start()
	he.until(b.name+" to name "+a.name+" the leader", 30*time.Second, func() bool {
		cl, err := b.client.Cluster(context.Background())
		return err == nil && cl.Self == b.name && cl.Leader == a.name
	})
	// The standby forwards the rest to the leader: its answers are the
	// leader's, once its own reading of the lease (every lease_retry)
	// names it.
	he.until("a summary through the standby "+b.name+", forwarded to "+a.name, 30*time.Second, func() bool {
		_, err := b.client.Summary(context.Background())
		return err == nil
	})
	var names []string
	for i := range 4 + 6*rounds {
		name := fmt.Sprintf("c%02d", i)
		names = append(names, name)
		if _, err := a.client.Submit(context.Background(), he.markedSpec(name, 2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	firstEpoch := a.metric("dispatch_tui_epoch") // 1, unless a loaded machine cost a renewal
	n, _ := strconv.Atoi(firstEpoch)
	leader, standby := a, b
	var toLead, toStart, toRun []time.Duration
	var phases []takeover
	for round := range rounds {
		he.until("two containers running", 60*time.Second, func() bool { return countState(he.containers(), queue.Running) >= 2 })
		he.phase("two running")
		killed := time.Now()
		leader.stop(syscall.SIGKILL)
		he.until(standby.name+" to lead", 4*haLease, standby.leads)
		toLead = append(toLead, time.Since(killed))
		he.until("a start by the new leader", 60*time.Second, func() bool { return firstStartAfter(he.containers(), killed) > 0 })
		toStart = append(toStart, firstStartAfter(he.containers(), killed))
		// started_at is the pass's record; the run itself begins once the
		// runner has it (after the instance's watch, if held for it): the
		// starts file has the command's own clock. Counted from the new
		// leader's open: a start the killed node sent just before the
		// kill may begin to run after it.
		var tk takeover
		var opened time.Time
		he.until("a run started by the new leader", 60*time.Second, func() bool {
			var ok bool
			tk, opened, ok = standby.readTakeover(killed)
			return ok && he.firstStartSince(opened) > 0
		})
		tk.start = opened.Sub(killed) + he.firstStartSince(opened)
		toRun = append(toRun, tk.start)
		phases = append(phases, tk)
		t.Logf("takeover %d: kill -9 of %s → %s leads %s, → its first start %s (recorded), %s (run); %s", round+1, leader.name, standby.name,
			toLead[round].Round(time.Millisecond), toStart[round].Round(time.Millisecond), tk.start.Round(time.Millisecond), tk)
		leader.start()
		if leader.leads() {
			t.Fatalf("%s, restarted, leads beside %s", leader.name, standby.name)
		}
		leader, standby = standby, leader
	}
	he.until("every container to finish", 3*time.Minute, func() bool { return countState(he.containers(), queue.Complete) == len(names) })
	he.phase("all finished")
	he.check(names)
	evs := he.events()
	if !hasEvent(evs, "node:"+b.name, "leader_elected", fmt.Sprintf("node %s leads with epoch %d; it had been expired for", b.name, n+1)) {
		t.Errorf("no leader_elected event of %s at epoch %d naming how long the lease had been expired:%s", b.name, n+1, he.dump())
	}
	if !hasEvent(evs, "node:"+b.name, "leader_lost", fmt.Sprintf("node %s no longer leads (epoch %d)", a.name, n)) {
		t.Errorf("no leader_lost event for %s:%s", a.name, he.dump())
	}
	if rounds > 1 {
		t.Logf("kill → leads: %s", distribution(toLead))
		t.Logf("kill → first start: %s (recorded), %s (run)", distribution(toStart), distribution(toRun))
		for _, d := range phaseDistributions(phases) {
			t.Logf("phase %s", d)
		}
	}
	// A clean stop releases the lease after the last write: the standby
	// leads at its next try, and the old leader's leader_lost is written.
	termed := time.Now()
	leader.stop(syscall.SIGTERM)
	he.until(standby.name+" to lead after "+leader.name+"'s SIGTERM", 4*haLease, standby.leads)
	t.Logf("SIGTERM of %s → %s leads %s", leader.name, standby.name, time.Since(termed).Round(time.Millisecond))
	// The new leader serves its event log once its engine is open.
	he.until("the leader_lost event of "+leader.name+" releasing the lease", 30*time.Second, func() bool {
		return hasEvent(he.events(), "node:"+leader.name, "leader_lost", "stopped and released the lease")
	})
}

// TestHAPausedLeaderActsNoMore: the leader is stopped (SIGSTOP) longer
// than its lease while containers run and more wait; the standby takes
// over, and once woken (SIGCONT) the old leader says it lost the lease
// and sends nothing: every container ran once, all by the new leader's
// record, and the woken node stands by.
func TestHAPausedLeaderActsNoMore(t *testing.T) {
	he := newHAEnv(t, 2, 1)
	a, b := he.nodes[0], he.nodes[1]
	a.start()
	he.until(a.name+" to lead", 30*time.Second, a.leads)
	b.start()
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("p%02d", i)
		names = append(names, name)
		if _, err := a.client.Submit(context.Background(), he.markedSpec(name, 3*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	he.until("two containers running", 60*time.Second, func() bool { return countState(he.containers(), queue.Running) == 2 })
	he.phase("two running")
	epoch := a.metric("dispatch_tui_epoch")
	a.signal(syscall.SIGSTOP)
	stopped := time.Now()
	he.until(b.name+" to lead", 4*haLease, b.leads)
	he.phase(b.name + " leads")
	// b adopts the two running and starts the next once they end: a's
	// view, frozen, still has them running and the rest waiting.
	he.until(b.name+"'s first start", 60*time.Second, func() bool { return firstStartAfter(he.containers(), stopped) > 0 })
	he.phase(b.name + " started one")
	a.signal(syscall.SIGCONT)
	he.until(a.name+" to say it no longer leads", 30*time.Second, func() bool {
		log, _ := os.ReadFile(a.logPath)
		return strings.Contains(string(log), "no longer leads with epoch "+epoch+":")
	})
	he.until(a.name+" after waking to name "+b.name+" the leader", 30*time.Second, func() bool {
		cl, err := a.client.Cluster(context.Background())
		return err == nil && cl.Self == a.name && cl.Leader == b.name
	})
	he.until("a summary through "+a.name+" after waking, forwarded to "+b.name, 30*time.Second, func() bool {
		_, err := a.client.Summary(context.Background())
		return err == nil
	})
	n, _ := strconv.Atoi(epoch)
	for _, m := range []struct {
		p          *haProc
		name, want string
	}{
		{a, "dispatch_tui_leader", "0"}, {a, "dispatch_tui_epoch", "0"},
		{b, "dispatch_tui_leader", "1"}, {b, "dispatch_tui_epoch", strconv.Itoa(n + 1)}, {b, "dispatch_tui_takeovers_total", "1"},
	} {
		if got := m.p.metric(m.name); got != m.want {
			t.Errorf("%s's %s = %q, want %s", m.p.name, m.name, got, m.want)
		}
	}
	he.phase(a.name + " stands by")
	he.until("every container to finish", 2*time.Minute, func() bool { return countState(he.containers(), queue.Complete) == len(names) })
	he.phase("all finished")
	he.check(names)
	for _, c := range he.containers() {
		if c.Attempts != 1 {
			t.Errorf("container %s (%s) took %d attempts, want 1: nothing was lost or run twice", c.ID, c.Name, c.Attempts)
		}
	}
	log, _ := os.ReadFile(a.logPath)
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "killing container") || strings.Contains(line, "destroyed instance") {
			t.Errorf("%s acted: %s", a.name, line)
		}
	}
	if t.Failed() {
		t.Fatalf("state:%s", he.dump())
	}
}

func countState(cs []view.Container, s queue.State) int {
	n := 0
	for _, c := range cs {
		if c.State == s {
			n++
		}
	}
	return n
}

// firstStartAfter is how long after t the first container started after
// it did (0: none yet).
func firstStartAfter(cs []view.Container, t time.Time) time.Duration {
	var first time.Duration
	for _, c := range cs {
		if d := c.StartedAt.Sub(t); c.StartedAt.After(t) && (first == 0 || d < first) {
			first = d
		}
	}
	return first
}

func hasEvent(evs []view.Event, actor, kind, reason string) bool {
	return slices.ContainsFunc(evs, func(ev view.Event) bool {
		return ev.Actor == actor && ev.Kind == kind && strings.Contains(ev.Reason, reason)
	})
}

// distribution is "p50 X, p99 Y, max Z over N".
func distribution(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("p50 %s, p99 %s, max %s over %d", at(0.5).Round(time.Millisecond), at(0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}
