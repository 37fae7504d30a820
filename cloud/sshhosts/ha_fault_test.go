//go:build linux

package sshhosts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// Faults between the daemon nodes, PostgreSQL and the hosts, made by the
// fixture's proxies (docs/design.md §11, §10.1), each ended by the
// checker.

// leaderAndStandby starts a, waits for it to lead, then starts b and
// waits for b to forward to it.
func (he *haEnv) leaderAndStandby() (a, b *haProc) {
	a, b = he.nodes[0], he.nodes[1]
	a.start()
	he.until(a.name+" to lead", 30*time.Second, a.leads)
	b.start()
	he.until(b.name+" to forward to "+a.name, 30*time.Second, func() bool {
		cl, err := b.client.Cluster(context.Background())
		if err != nil || cl.Self != b.name || cl.Leader != a.name {
			return false
		}
		_, err = b.client.Summary(context.Background())
		return err == nil
	})
	return a, b
}

// submit submits n marked containers named prefix00… taking d each,
// through node p.
func (he *haEnv) submit(p *haProc, prefix string, n int, d time.Duration) []string {
	he.t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s%02d", prefix, i)
		if _, err := p.client.Submit(context.Background(), he.markedSpec(name, d)); err != nil {
			he.t.Fatalf("submit %s through %s: %v", name, p.name, err)
		}
		names = append(names, name)
	}
	return names
}

// untilStarted waits until n of the containers named have started on
// their hosts, by their marker files (the leader may count a container
// Running while its start is still on the way).
func (he *haEnv) untilStarted(names []string, n int) {
	he.t.Helper()
	he.until(fmt.Sprintf("%d containers started on their hosts", n), 60*time.Second, func() bool {
		started := 0
		for _, name := range names {
			if len(he.runsOf(name)) > 0 {
				started++
			}
		}
		return started >= n
	})
	he.phase(fmt.Sprintf("%d started", n))
}

// finish waits for every container to be Complete, then runs the checker.
func (he *haEnv) finish(names []string) {
	he.t.Helper()
	he.until("every container to finish", 3*time.Minute, func() bool { return countState(he.containers(), queue.Complete) == len(names) })
	he.phase("all finished")
	he.check(names)
}

func (p *haProc) logHas(s string) bool {
	b, _ := os.ReadFile(p.logPath)
	return strings.Contains(string(b), s)
}

// TestHALeaderCutFromStoreStops is the split brain: the leader loses
// PostgreSQL but keeps the hosts. It must stop acting once its lease has
// run out on its own clock (the proxies show it sent the hosts nothing
// after that), the standby takes over and raises every runner's epoch (so
// a start the old leader might still send is refused), and every container
// runs once.
func TestHALeaderCutFromStoreStops(t *testing.T) {
	t.Parallel()
	he := newHAEnv(t, 2, 2)
	a, b := he.leaderAndStandby()
	names := he.submit(a, "s", 8, 2*time.Second)
	he.untilStarted(names, 2)
	epoch, _ := strconv.ParseInt(a.metric("dispatch_tui_epoch"), 10, 64)
	cut := time.Now()
	he.pgProxy[0].Cut("")
	he.phase(a.name + " cut from PostgreSQL")
	he.until(a.name+" to say it no longer leads", 4*haLease, func() bool {
		return a.logHas(fmt.Sprintf("no longer leads with epoch %d:", epoch))
	})
	he.until(b.name+" to lead", 4*haLease, b.leads)
	he.phase(b.name + " leads")
	he.until("every runner to have seen "+b.name+"'s epoch", 60*time.Second, func() bool {
		for i := range he.hostDirs {
			if he.epochSeen(i) <= epoch {
				return false
			}
		}
		return true
	})
	// A start a still sent now, with its epoch, is refused by the runner
	// (its own exit code, naming both epochs) and starts nothing: the
	// deployed runner, run on each host as the driver runs it.
	for i, dir := range he.hostDirs {
		cmd := exec.Command(filepath.Join(dir, he.runner), "runner", "start", "c-of-the-deposed", "--epoch", strconv.FormatInt(epoch, 10))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), RunnerDirEnv+"="+filepath.Join(dir, RunnerDir))
		cmd.Stdin = strings.NewReader("{}")
		out, err := cmd.CombinedOutput()
		want := fmt.Sprintf("epoch %d is lower than epoch %d", epoch, he.epochSeen(i))
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != runner.CodeFenced || !strings.Contains(string(out), want) {
			t.Errorf("host %d's runner took a start at %s's epoch %d: %v: %s (want exit %d saying %q)", i, a.name, epoch, err, out, runner.CodeFenced, want)
		}
	}
	he.finish(names)
	// a's last renewal was sent before the cut: its lease ran out on its
	// clock by cut + lease at the latest, and nothing of it reached a host
	// after that, though its connections to them were never cut.
	if last := he.hostStats(a).LastUp; last.After(cut.Add(haLease)) {
		t.Errorf("%s, deposed, sent bytes to a host %s after the cut (its lease is %s)", a.name, last.Sub(cut).Round(time.Millisecond), haLease)
	}
	if he.hostStats(b).Up == 0 {
		t.Errorf("the proxies recorded nothing of %s: they do not tell the nodes apart", b.name)
	}
	// Healed, a reads the lease again and stands by.
	he.pgProxy[0].Heal("")
	he.until(a.name+" to name "+b.name+" the leader once healed", 30*time.Second, func() bool {
		cl, err := a.client.Cluster(context.Background())
		return err == nil && cl.Self == a.name && cl.Leader == b.name
	})
}

// TestHALeaderCutFromHosts: the leader loses every host for a while but
// keeps PostgreSQL: it keeps leading (no takeover), and once the hosts
// are back it finds what ran meanwhile; every container runs once.
func TestHALeaderCutFromHosts(t *testing.T) {
	t.Parallel()
	// An idle timeout longer than the cut (which ends with what ran at it,
	// seconds): with haIdle the hosts were shut down as idle on the probe
	// that found them again, the create after it met a host still being
	// released, and the queue waited out the pool's minute of capacity
	// back-off, most of this test's wall.
	he := newHAEnvIdle(t, 2, 2, 2, 10*time.Second, pgtest.Start(t))
	a, b := he.leaderAndStandby()
	names := he.submit(a, "h", 8, 2*time.Second)
	he.untilStarted(names, 2)
	epoch := a.metric("dispatch_tui_epoch")
	he.hostsCut(a, true)
	he.phase(a.name + " cut from the hosts")
	// The hosts run on unseen: the cut lasts until what ran at the cut has
	// ended there (shorter than timeout_probe: unreachable, not proven
	// dead).
	var running []string
	for _, name := range names {
		if runs := he.runsOf(name); len(runs) > 0 && runs[len(runs)-1].end == 0 {
			running = append(running, name)
		}
	}
	he.until("the containers running at the cut to end on their hosts", 30*time.Second, func() bool {
		for _, name := range running {
			runs := he.runsOf(name)
			if len(runs) == 0 || runs[len(runs)-1].end == 0 {
				return false
			}
		}
		return true
	})
	he.hostsCut(a, false)
	he.phase(a.name + " healed")
	he.finish(names)
	if got := a.metric("dispatch_tui_epoch"); got != epoch || !a.leads() {
		t.Errorf("%s leads=%v at epoch %s, want it still leading at %s", a.name, a.leads(), got, epoch)
	}
	if got := b.metric("dispatch_tui_takeovers_total"); got != "0" && got != "" {
		t.Errorf("%s took over %s times", b.name, got)
	}
}

// TestHAStoreRestarted: PostgreSQL restarts (-m immediate, a crash) while
// containers run: a leader leads afterwards (the same or the other) and
// every container runs once.
func TestHAStoreRestarted(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartOwn(t)
	he := newHAEnvOn(t, 2, 2, srv)
	a, _ := he.leaderAndStandby()
	names := he.submit(a, "r", 8, 2*time.Second)
	he.untilStarted(names, 2)
	if err := srv.Restart("immediate"); err != nil {
		t.Fatal(err)
	}
	he.phase("PostgreSQL restarted")
	he.until("a leader after the restart", 60*time.Second, func() bool { return he.leader() != nil })
	he.phase(he.leader().name + " leads")
	he.finish(names)
}

// TestHAStandbyKilled: the standby is killed (-9) while containers run:
// the leader keeps leading at its epoch, the standby comes back standing
// by, and every container runs once.
func TestHAStandbyKilled(t *testing.T) {
	t.Parallel()
	he := newHAEnv(t, 2, 2)
	a, b := he.leaderAndStandby()
	epoch := a.metric("dispatch_tui_epoch")
	names := he.submit(b, "k", 8, 2*time.Second) // through the standby, forwarded
	he.untilStarted(names, 2)
	b.stop(syscall.SIGKILL)
	he.phase(b.name + " killed")
	b.start()
	if b.leads() {
		t.Fatalf("%s, restarted, leads beside %s", b.name, a.name)
	}
	he.finish(names)
	if got := a.metric("dispatch_tui_epoch"); got != epoch || !a.leads() {
		t.Errorf("%s leads=%v at epoch %s, want it still leading at %s", a.name, a.leads(), got, epoch)
	}
}

// TestHATwoNodesStartAtOnce: two nodes start at the same instant on an
// empty cluster: exactly one leads, the other names it, and every
// container runs once.
func TestHATwoNodesStartAtOnce(t *testing.T) {
	t.Parallel()
	he := newHAEnv(t, 2, 2)
	// Launched back to back, a fork and exec apart: both daemons reach
	// the lease within the same instant of their start-up.
	for _, p := range he.nodes {
		p.launch()
	}
	for _, p := range he.nodes {
		p.awaitAPI()
	}
	he.until("one node to lead", 30*time.Second, func() bool { return he.leader() != nil })
	l := he.leader()
	for _, p := range he.nodes {
		he.until(p.name+" to name "+l.name+" the leader", 30*time.Second, func() bool {
			cl, err := p.client.Cluster(context.Background())
			return err == nil && cl.Leader == l.name
		})
		if p != l && p.leads() {
			t.Fatalf("%s and %s both lead", p.name, l.name)
		}
	}
	names := he.submit(he.nodes[0], "t", 6, time.Second)
	he.finish(names)
	if got := l.metric("dispatch_tui_epoch"); got != "1" {
		t.Logf("the leader's epoch is %s: a renewal was lost on the way (a loaded machine)", got)
	}
}

// retriedSpec is markedSpec for a container whose first run fails (exit
// 1, after writing its output and end line) and is retried under
// on-failure: it runs twice, and its stored output must hold both runs'.
func (he *haEnv) retriedSpec(name string, d time.Duration) queue.Spec {
	s := he.markedSpec(name, d)
	s.Command[2] = `first=0; [ -s "$1" ] || first=1; ` + s.Command[2] + `; [ "$first" = 0 ]`
	s.RestartPolicy = queue.RestartOnFailure
	return s
}

// TestHARetriedContainerKeepsEveryRunsOutput: containers that run twice
// across the leader's cut from the hosts and a PostgreSQL restart (-m
// immediate), the sequence around which the HA soak found two containers
// whose first run's output was missing: the checker finds each run's
// output in the store (its second run's store used to replace the
// first's).
func TestHARetriedContainerKeepsEveryRunsOutput(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartOwn(t)
	he := newHAEnvOn(t, 2, 2, srv)
	a, _ := he.leaderAndStandby()
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("t%02d", i)
		if _, err := a.client.Submit(context.Background(), he.retriedSpec(name, time.Second)); err != nil {
			t.Fatalf("submit %s: %v", name, err)
		}
		names = append(names, name)
	}
	he.untilStarted(names, 2)
	he.hostsCut(a, true)
	he.phase(a.name + " cut from the hosts")
	if err := srv.Restart("immediate"); err != nil {
		t.Fatal(err)
	}
	he.phase("PostgreSQL restarted")
	he.hostsCut(a, false)
	he.phase(a.name + " healed")
	he.until("a leader after the restart", 60*time.Second, func() bool { return he.leader() != nil })
	he.finish(names)
	for _, c := range he.containers() {
		if c.Attempts != 2 {
			t.Errorf("container %s (%s) ended after %d attempts, want 2 (its first run fails)", c.ID, c.Name, c.Attempts)
		}
	}
}
