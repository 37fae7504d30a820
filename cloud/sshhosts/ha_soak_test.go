//go:build linux

package sshhosts

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// The HA soak (make soak-ha): many faults, drawn by a seed, over many
// containers on a cluster of the built binary; the checker at the end.
// make test runs its short seed (the defaults).
var (
	haSoakFaults     = flag.Int("hasoak.faults", 3, "faults the HA soak injects")
	haSoakContainers = flag.Int("hasoak.containers", 24, "containers the HA soak runs")
	haSoakNodes      = flag.Int("hasoak.nodes", 2, "daemon nodes of the HA soak")
	haSoakHosts      = flag.Int("hasoak.hosts", 2, "sshd hosts of the HA soak")
	haSoakSlots      = flag.Int("hasoak.slots", 2, "containers at once on each host of the HA soak")
	haSoakSeed       = flag.Uint64("hasoak.seed", 1, "the HA soak's seed (faults and pauses)")
	haSoakLogs       = flag.String("hasoak.logs", "", "a directory to keep the nodes' logs in (node0.log, …)")
	haSoakOnly       = flag.String("hasoak.only", "", "only the fault kinds whose name holds this (say \"kill -9\", to time takeovers)")
)

// haFault is one kind of fault the soak injects, done to the cluster as
// it is (l leads now); it returns once the cluster leads again.
type haFault struct {
	name string
	do   func(s *haSoak, l *haProc)
}

var haFaults = []haFault{
	{"kill -9 of the leader", (*haSoak).killLeader},
	{"SIGSTOP of the leader past its lease", (*haSoak).pauseLeader},
	{"the leader cut from PostgreSQL", func(s *haSoak, l *haProc) { s.storeFault(l, false) }},
	{"the leader black-holed from PostgreSQL", func(s *haSoak, l *haProc) { s.storeFault(l, true) }},
	{"the leader cut from the hosts", (*haSoak).cutHosts},
	{"the leader's host traffic delayed", (*haSoak).delayHosts},
	{"a standby killed", (*haSoak).killStandby},
	{"PostgreSQL restarted -m immediate", (*haSoak).restartStore},
	{"SIGTERM of the leader (handover)", (*haSoak).termLeader},
}

// faultKinds are the fault kinds whose name holds only (all for "").
func faultKinds(only string) []haFault {
	var fs []haFault
	for _, f := range haFaults {
		if strings.Contains(f.name, only) {
			fs = append(fs, f)
		}
	}
	return fs
}

type haSoak struct {
	he  *haEnv
	srv *pgtest.Server
	rng *rand.Rand
	// Takeovers after kill -9: kill → another node leads, kill → the
	// first start after the kill, and what each was made of.
	toLead, toStart []time.Duration
	takeovers       []takeover
	counts          map[string]int
	pauseStart      time.Time // paused's
	// asked is the node whose summary the waits for work read last: any
	// node answers one (a standby forwards it).
	asked *haProc
}

// TestHASoak injects -hasoak.faults faults, one after another, while
// -hasoak.containers containers run; then every container must pass the
// checker, and the takeover times after kill -9 are logged as
// distributions, with what each was made of (BENCHMARKS.md). Each fault
// waits for its share of the work to be done and for a pause of the
// seed's since the last one ended: back to back, the faults would leave
// the cluster recovering from one takeover to the next, running nothing.
func TestHASoak(t *testing.T) {
	t.Parallel()
	if *haSoakNodes < 2 {
		t.Fatal("-hasoak.nodes: a cluster needs two nodes at least")
	}
	srv := pgtest.StartOwn(t)
	s := &haSoak{he: newHAEnvSized(t, *haSoakNodes, *haSoakHosts, *haSoakSlots, srv), srv: srv, rng: rand.New(rand.NewPCG(*haSoakSeed, 0x4841)), counts: map[string]int{}}
	he := s.he
	if *haSoakLogs != "" {
		t.Cleanup(func() { he.keepLogs(*haSoakLogs) })
	}
	for _, p := range he.nodes {
		p.start()
	}
	he.until("a leader", 30*time.Second, func() bool { return he.leader() != nil })
	names := s.submitAll(*haSoakContainers)
	he.phase(fmt.Sprintf("%d containers submitted", len(names)))
	kinds := faultKinds(*haSoakOnly)
	if len(kinds) == 0 {
		t.Fatalf("-hasoak.only=%q names no fault kind", *haSoakOnly)
	}
	began := time.Now()
	ended := began // the last fault's end
	for i := range *haSoakFaults {
		// Fault i comes once (i+1)/(faults+1) of the work is done, so the
		// cluster has booted and leaves work for after the last; the pause
		// runs from the last fault's end, beside its share.
		pause := time.Duration(500+s.rng.IntN(1500)) * time.Millisecond
		share := (i + 1) * len(names) / (*haSoakFaults + 1)
		s.untilComplete(share, fmt.Sprintf("%d containers complete before fault %d", share, i+1))
		he.until(fmt.Sprintf("a pause of %s before fault %d", pause, i+1), pause+30*time.Second, func() bool { return time.Since(ended) >= pause })
		l := s.leader()
		f := kinds[s.rng.IntN(len(kinds))]
		s.counts[f.name]++
		done := s.complete()
		he.phase(fmt.Sprintf("fault %d: %s (%s leads; %d complete, %.2f/s since the submit)", i+1, f.name, l.name, done, float64(done)/time.Since(began).Seconds()))
		f.do(s, l)
		s.leader()
		ended = time.Now()
	}
	he.phase("faults done")
	s.untilComplete(len(names), "every container to finish")
	he.phase(fmt.Sprintf("all finished: %.2f containers/s from the submit", float64(len(names))/time.Since(began).Seconds()))
	he.check(names)
	he.phase("checked")
	var counts []string
	for _, f := range kinds {
		counts = append(counts, fmt.Sprintf("%s ×%d", f.name, s.counts[f.name]))
	}
	t.Logf("%d faults over %d containers, %d nodes, %d hosts of %d slots, seed %d: %s", *haSoakFaults, len(names), *haSoakNodes, *haSoakHosts, *haSoakSlots, *haSoakSeed, strings.Join(counts, ", "))
	if len(s.toLead) > 0 {
		t.Logf("kill -9 → another node leads: %s", distribution(s.toLead))
	}
	if len(s.toStart) > 0 {
		t.Logf("kill -9 → its first start: %s", distribution(s.toStart))
	}
	for _, d := range phaseDistributions(s.takeovers) {
		t.Logf("  %s", d)
	}
}

// complete is how many containers are Complete, by the summary of a
// running node (-1 when none answers).
func (s *haSoak) complete() int {
	nodes := s.he.nodes
	if s.asked != nil {
		nodes = append([]*haProc{s.asked}, nodes...)
	}
	for _, p := range nodes {
		if p.cmd == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		sum, err := p.client.Summary(ctx)
		cancel()
		if err == nil {
			s.asked = p
			return sum.Containers[queue.Complete]
		}
	}
	return -1
}

// untilComplete waits until n containers are Complete, asking a few
// times a second (the summary is the cluster's, through whichever node).
// A container takes well under a second: a second each and three minutes
// for a takeover are the bound of a cluster that runs nothing.
func (s *haSoak) untilComplete(n int, what string) {
	var next time.Time
	done := s.complete()
	s.he.until(what, time.Duration(n-max(done, 0))*time.Second+3*time.Minute, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(250 * time.Millisecond)
		done = s.complete()
		return done >= n
	})
}

// paused reports whether d has passed since it was first asked about d
// (the soak's pause between faults, polled like any other wait).
func (s *haSoak) paused(d time.Duration) bool {
	if s.pauseStart.IsZero() {
		s.pauseStart = time.Now()
	}
	if time.Since(s.pauseStart) < d {
		return false
	}
	s.pauseStart = time.Time{}
	return true
}

// submitAll submits n marked containers in batches through the leader.
// A batch is one store transaction: one that failed wrote nothing, and
// is sent again once the leader's count shows it is not there (a loaded
// machine can stall a transaction past the store's idle limit).
func (s *haSoak) submitAll(n int) []string {
	he := s.he
	var names []string
	for len(names) < n {
		var specs []view.Spec
		for i := 0; i < 100 && len(names) < n; i++ {
			name := fmt.Sprintf("soak%05d", len(names))
			names = append(names, name)
			specs = append(specs, he.markedSpec(name, time.Duration(100+s.rng.IntN(400))*time.Millisecond))
		}
		for try := 1; ; try++ {
			l := s.leader()
			_, err := l.client.SubmitBatch(context.Background(), specs)
			if err == nil {
				break
			}
			sum, serr := l.client.Summary(context.Background())
			total := 0
			for _, c := range sum.Containers {
				total += c
			}
			if serr != nil || total != len(names)-len(specs) || try == 3 {
				he.t.Fatalf("submit of %d (try %d): %v; the leader has %d containers, %d before the batch (%v)", len(specs), try, err, total, len(names)-len(specs), serr)
			}
			he.t.Logf("submit of %d, try %d: %v; none of it stored: again", len(specs), try, err)
		}
	}
	return names
}

// leader waits for a node to lead and returns it.
func (s *haSoak) leader() *haProc {
	var l *haProc
	s.he.until("a leader", 60*time.Second, func() bool { l = s.he.leader(); return l != nil })
	return l
}

// another waits for a node other than l to lead and returns it.
func (s *haSoak) another(l *haProc) *haProc {
	var n *haProc
	s.he.until("a node other than "+l.name+" to lead", 60*time.Second, func() bool {
		n = s.he.leader()
		return n != nil && n != l
	})
	return n
}

// queued reports whether some container still waits for a start.
func (s *haSoak) queued(l *haProc) bool {
	sum, err := l.client.Summary(context.Background())
	return err == nil && sum.Containers[queue.Queued]+sum.Containers[queue.Locked] > 0
}

func (s *haSoak) killLeader(l *haProc) {
	he := s.he
	waiting := s.queued(l)
	killed := time.Now()
	l.stop(syscall.SIGKILL)
	n := s.another(l)
	toLead := time.Since(killed)
	s.toLead = append(s.toLead, toLead)
	he.phase(fmt.Sprintf("%s leads %s after the kill", n.name, toLead.Round(time.Millisecond)))
	var (
		tk     takeover
		opened time.Time
	)
	he.until(n.name+"'s log to say its engine is open", 30*time.Second, func() bool {
		var ok bool
		tk, opened, ok = n.readTakeover(killed)
		return ok
	})
	if waiting {
		// Counted from the new leader's engine open: a start the killed
		// node sent just before its end may begin on its host after the
		// kill, and is not the new leader's.
		he.until("a start by the new leader", 60*time.Second, func() bool { return he.firstStartSince(opened) > 0 })
		tk, _, _ = n.readTakeover(killed) // the phases before the start are all logged now
		tk.start = opened.Sub(killed) + he.firstStartSince(opened)
		s.toStart = append(s.toStart, tk.start)
		s.takeovers = append(s.takeovers, tk)
		he.phase(fmt.Sprintf("the first start %s after the kill: %s", tk.start.Round(time.Millisecond), tk))
	}
	l.start()
}

func (s *haSoak) pauseLeader(l *haProc) {
	l.signal(syscall.SIGSTOP)
	s.another(l)
	l.signal(syscall.SIGCONT)
}

func (s *haSoak) termLeader(l *haProc) {
	l.stop(syscall.SIGTERM)
	s.another(l)
	l.start()
}

// storeFault cuts (or black-holes) l from PostgreSQL until another node
// leads, then heals it.
func (s *haSoak) storeFault(l *haProc, blackHole bool) {
	i := s.he.index(l)
	if blackHole {
		s.he.pgProxy[i].BlackHole("")
	} else {
		s.he.pgProxy[i].Cut("")
	}
	s.another(l)
	s.he.pgProxy[i].Heal("")
}

// cutHosts cuts l from every host for up to two seconds of the seed's.
func (s *haSoak) cutHosts(l *haProc) {
	s.he.hostsCut(l, true)
	s.hold(time.Duration(200+s.rng.IntN(1800)) * time.Millisecond)
	s.he.hostsCut(l, false)
}

// delayHosts delays l's traffic with every host by up to 500 ms for two
// seconds.
func (s *haSoak) delayHosts(l *haProc) {
	d := time.Duration(50+s.rng.IntN(450)) * time.Millisecond
	for _, hp := range s.he.hostVia {
		hp.Delay(l.name, d)
	}
	s.hold(2 * time.Second)
	for _, hp := range s.he.hostVia {
		hp.Heal(l.name)
	}
}

func (s *haSoak) killStandby(l *haProc) {
	for _, p := range s.he.nodes {
		if p != l && p.cmd != nil {
			p.stop(syscall.SIGKILL)
			p.start()
			return
		}
	}
}

func (s *haSoak) restartStore(*haProc) {
	if err := s.srv.Restart("immediate"); err != nil {
		s.he.t.Fatal(err)
	}
}

// hold lets a fault last d: the cluster is left as it is meanwhile.
func (s *haSoak) hold(d time.Duration) {
	s.he.until("the fault to last "+d.String(), d+30*time.Second, func() bool { return s.paused(d) })
}

// index is p's position among the nodes (its proxies').
func (he *haEnv) index(p *haProc) int {
	for i, n := range he.nodes {
		if n == p {
			return i
		}
	}
	he.t.Fatalf("%s is not a node", p.name)
	return -1
}

// keepLogs copies each node's log into dir, as NAME.log.
func (he *haEnv) keepLogs(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		he.t.Error(err)
		return
	}
	for _, p := range he.nodes {
		b, err := os.ReadFile(p.logPath)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, p.name+".log"), b, 0o644)
		}
		if err != nil {
			he.t.Errorf("keeping %s's log: %v", p.name, err)
		}
	}
}
