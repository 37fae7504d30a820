//go:build linux

package sshhosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// The partition tests put each host in a network namespace of its own,
// joined to the test by a veth pair on a bridge the test creates, with
// addresses in 10.231.N.0/24 on that bridge only. A cut takes the
// test-side end of one host's veth down: packets are dropped, nothing is
// reset, and the host's processes keep running, as in a real partition.

// requirePartitionTools skips the test unless it can build network
// namespaces (root, iproute2) and run sshd, except in CI, where it must.
func requirePartitionTools(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (to create network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		missing = append(missing, "ip (iproute2)")
	}
	if _, err := os.Stat(sshdPath); err != nil {
		missing = append(missing, sshdPath+" (openssh-server)")
	}
	if len(missing) == 0 {
		return
	}
	msg := "partition test needs " + strings.Join(missing, ", ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// ipCmd runs ip with args, bounded in time.
func ipCmd(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// partitionNet is a bridge in the test's namespace and one namespace per
// host, each linked to the bridge by a veth pair.
type partitionNet struct {
	t      *testing.T
	bridge string
	subnet string   // "10.231.N"
	netns  []string // per host
	outer  []string // per host: the veth end on the bridge (cut here)
	ips    []string // per host
}

var (
	netSeq   atomic.Int32
	subnetMu sync.Mutex
)

// newPartitionNet builds the network for n hosts. Names carry the test
// process's pid, so that concurrent runs do not clash; everything is
// removed in t.Cleanup, also when the test fails.
func newPartitionNet(t *testing.T, n int) *partitionNet {
	t.Helper()
	requirePartitionTools(t)
	pid := os.Getpid()
	// A letter per network of this process (the tests run in parallel),
	// keeping every interface name within 15 bytes.
	tag := fmt.Sprintf("%d%c", pid, 'a'+rune(netSeq.Add(1)%26))
	pn := &partitionNet{t: t, bridge: "dtb" + tag}
	t.Cleanup(pn.remove)
	must := func(args ...string) {
		t.Helper()
		if err := ipCmd(args...); err != nil {
			t.Fatal(err)
		}
	}
	// The subnet is free until the bridge has its address: one test at a
	// time picks one.
	func() {
		subnetMu.Lock()
		defer subnetMu.Unlock() // also when must fails the test
		subnet := pickSubnet(t, pid)
		must("link", "add", "name", pn.bridge, "type", "bridge")
		must("addr", "add", subnet+".1/24", "dev", pn.bridge)
		pn.subnet = subnet
	}()
	must("link", "set", pn.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("dt%sh%d", tag, i)
		outer, inner := fmt.Sprintf("dto%sh%d", tag, i), fmt.Sprintf("dti%sh%d", tag, i)
		ip := fmt.Sprintf("%s.%d", pn.subnet, 10+i)
		pn.netns = append(pn.netns, ns)
		pn.outer = append(pn.outer, outer)
		pn.ips = append(pn.ips, ip)
		must("netns", "add", ns)
		must("link", "add", outer, "type", "veth", "peer", "name", inner)
		must("link", "set", inner, "netns", ns)
		must("link", "set", outer, "master", pn.bridge)
		must("link", "set", outer, "up")
		must("-n", ns, "link", "set", "lo", "up")
		must("-n", ns, "addr", "add", ip+"/24", "dev", inner)
		must("-n", ns, "link", "set", inner, "up")
	}
	return pn
}

// pickSubnet returns "10.231.N" for an N no address on this machine uses.
func pickSubnet(t *testing.T, pid int) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	for k := range 250 {
		s := fmt.Sprintf("10.231.%d", (pid+k)%250+1)
		if !strings.Contains(string(out), " "+s+".") {
			return s
		}
	}
	t.Fatal("no free 10.231.N.0/24 subnet")
	return ""
}

func (pn *partitionNet) remove() {
	for i, ns := range pn.netns {
		if err := ipCmd("netns", "del", ns); err != nil {
			pn.t.Errorf("cleanup: %v", err)
		}
		ipCmd("link", "del", pn.outer[i]) // gone with the namespace, normally
	}
	if err := ipCmd("link", "del", pn.bridge); err != nil {
		pn.t.Errorf("cleanup: %v", err)
	}
}

// cut takes host i off the network; heal puts it back.
func (pn *partitionNet) cut(i int) {
	pn.t.Helper()
	if err := ipCmd("link", "set", pn.outer[i], "down"); err != nil {
		pn.t.Fatal(err)
	}
}

func (pn *partitionNet) heal(i int) {
	pn.t.Helper()
	if err := ipCmd("link", "set", pn.outer[i], "up"); err != nil {
		pn.t.Fatal(err)
	}
}

// partitionEnv is an engine on the sshhosts driver over hosts in network
// namespaces.
type partitionEnv struct {
	t       *testing.T
	net     *partitionNet
	sshd    *sshdEnv
	eng     *engine.Engine
	cfg     *config.Config
	markers string // one file per container, a line per run
	gates   string // a container's command ends once its gate file exists
	hostIdx map[string]int
}

func newPartitionEnv(t *testing.T, hosts int, tune func(*config.Config)) *partitionEnv {
	t.Helper()
	pn := newPartitionNet(t, hosts)
	env := newSSHDEnvAt(t, hosts, func(i int) (string, string) { return pn.netns[i], pn.ips[i] })
	binPath, bin, hash := dispatchBinary(t)
	logger := testLogger(t)
	pe := &partitionEnv{t: t, net: pn, sshd: env, markers: filepath.Join(env.dir, "markers"), gates: filepath.Join(env.dir, "gates"), hostIdx: map[string]int{}}
	for _, d := range []string{pe.markers, pe.gates} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	cfg, hs := env.engineConfig(t)
	preinstallRunner(t, hs, cfg.Cloud.RunnerPath+"~"+hash, binPath)
	cfg.Dispatcher.MaxContainersPerInstance = 2
	cfg.Cloud.ProbeInterval = time.Second
	cfg.Cloud.TimeoutProbe = 5 * time.Second
	cfg.Cloud.TimeoutRunnerCall = 2 * time.Second
	// Short, so a host is released right after its last container exits:
	// the output must be stored before that release all the same.
	cfg.Cloud.TimeoutIdle = 2 * time.Second
	for i, s := range env.servers {
		pe.hostIdx[string(InstanceID(s.addr))] = i
	}
	if tune != nil {
		tune(cfg)
	}
	drv := newDriver(t, cfg, hs, hash, "", logger)
	// Bring every link up first, so that the driver's release at the end
	// (a cleanup registered earlier, so run later) reaches every host.
	t.Cleanup(func() {
		for i := range pn.outer {
			ipCmd("link", "set", pn.outer[i], "up")
		}
	})
	pe.cfg = cfg
	var err error
	pe.eng, err = engine.New(engine.Options{
		Config: cfg, InstanceSet: drv, Logger: logger, NewExecutor: drv.Executor,
		RunnerHash: hash, RunnerBinary: func() ([]byte, error) { return bin, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pe.eng.Close() })
	return pe
}

// gatedSpec is a container that appends a line to its marker file under
// markers, prints "hello from NAME", then waits for its gate file under
// gates: at most 15 minutes, then fails. Not less: a test on a loaded
// machine opens the gate minutes after the start (at two minutes, a
// container of TestScriptDriverEngine ended before the other one started).
func gatedSpec(markers, gates, name string, maxAttempts int) queue.Spec {
	return queue.Spec{
		Name: name,
		// The paths are arguments, so that a leftover process shows them
		// in its command line (processesMentioning).
		Command: []string{"sh", "-c", `echo run >> "$1"; echo "hello from $3"; i=0; while [ ! -e "$2" ] && [ $i -lt 9000 ]; do sleep 0.1; i=$((i+1)); done; [ -e "$2" ]`,
			"sh", filepath.Join(markers, name), filepath.Join(gates, name), name},
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
		MaxAttempts:        maxAttempts,
	}
}

// openGate lets name's command (gatedSpec) finish.
func openGate(t *testing.T, gates, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(gates, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// gatedRuns is how many times name's command (gatedSpec) started.
func gatedRuns(t *testing.T, markers, name string) int {
	b, err := os.ReadFile(filepath.Join(markers, name))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

func (pe *partitionEnv) submit(name string, maxAttempts int) string {
	pe.t.Helper()
	c, err := pe.eng.Submit(gatedSpec(pe.markers, pe.gates, name, maxAttempts), "test")
	if err != nil {
		pe.t.Fatal(err)
	}
	return c.ID
}

func (pe *partitionEnv) open(name string) { pe.t.Helper(); openGate(pe.t, pe.gates, name) }

func (pe *partitionEnv) runs(name string) int { return gatedRuns(pe.t, pe.markers, name) }

func (pe *partitionEnv) container(id string) view.Container {
	c, _ := pe.eng.Container(id)
	return c
}

func (pe *partitionEnv) dump() string {
	var b strings.Builder
	for _, v := range pe.eng.Instances() {
		fmt.Fprintf(&b, "\n  instance %s %s containers=%v probe_failing=%v last_error=%q", v.ID, v.State, v.Containers, v.ProbeFailing, v.LastError)
	}
	cs, _ := pe.eng.Containers(engine.ListOptions{})
	for _, c := range cs {
		code := "-"
		if c.ExitCode != nil {
			code = fmt.Sprint(*c.ExitCode)
		}
		fmt.Fprintf(&b, "\n  container %s %s %s exit=%s inst=%s attempts=%d runs=%d reason=%q", c.ID, c.Name, c.State, code, c.InstanceID, c.Attempts, pe.runs(c.Name), c.Reason)
	}
	evs, _ := pe.eng.Events(0, 10000)
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  event %s %s %s %s %s: %s", ev.Time.Format("15:04:05.000"), ev.Actor, ev.Kind, ev.Target, ev.Action, ev.Reason)
	}
	return b.String()
}

// until steps the engine in real time until cond holds.
func (pe *partitionEnv) until(what string, timeout time.Duration, cond func() bool) {
	pe.t.Helper()
	wait.With{Step: pe.step, Seen: pe.dump}.Until(pe.t, what, timeout, cond)
}

// stepFor steps the engine in real time for d.
func (pe *partitionEnv) stepFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		pe.step()
	}
}

func (pe *partitionEnv) step() {
	pe.eng.Step()
	time.Sleep(50 * time.Millisecond)
}

// reportedRunning reports whether the runner of id's instance has listed
// it running (so its command has started): the container, as ls shows
// it, is Running and its runner has listed this attempt.
func (pe *partitionEnv) reportedRunning(id string) bool {
	c := pe.container(id)
	return c.State == queue.Running && c.RunnerSeen
}

// shownUnreachable reports whether the instance shows an operator that it
// cannot be reached: since when, and why.
func shownUnreachable(v view.Instance) bool {
	return !v.UnreachableSince.IsZero() && v.LastError != ""
}

// settledClean waits until every container is final, every host is
// released (idle instances shut down) and no container process is left.
func (pe *partitionEnv) settledClean(ids []string) {
	pe.t.Helper()
	pe.until("all containers final", 3*time.Minute, func() bool {
		for _, id := range ids {
			if !pe.container(id).State.Final() {
				return false
			}
		}
		return true
	})
	pe.until("every instance shut down and gone once idle", 3*time.Minute, func() bool {
		return len(pe.eng.Instances()) == 0
	})
	pe.until("no container process left", 10*time.Second, func() bool {
		return len(processesMentioning(pe.gates)) == 0
	})
}

// TestPartitionNoDoubleRun cuts a host with two containers on it for longer
// than timeout_probe. One container finishes during the cut, the other
// after the heal; neither may run a second time, and both end Complete.
func TestPartitionNoDoubleRun(t *testing.T) {
	t.Parallel()
	pe := newPartitionEnv(t, 2, nil)
	names := []string{"c0", "c1", "c2", "c3"}
	var ids []string
	for _, n := range names {
		ids = append(ids, pe.submit(n, 3))
	}
	pe.until("all four running on the hosts", 3*time.Minute, func() bool {
		for _, id := range ids {
			if !pe.reportedRunning(id) {
				return false
			}
		}
		return true
	})
	// Which containers are on the host we cut.
	cutHost := pe.container(ids[0]).InstanceID
	var onCut, onOther []string
	for i, id := range ids {
		if pe.container(id).InstanceID == cutHost {
			onCut = append(onCut, names[i])
		} else {
			onOther = append(onOther, names[i])
		}
	}
	if len(onCut) != 2 || len(onOther) != 2 {
		t.Fatalf("want two containers per host, got %v on %s and %v elsewhere:%s", onCut, cutHost, onOther, pe.dump())
	}
	hi := pe.hostIdx[cutHost]

	t0 := time.Now()
	pe.net.cut(hi)
	// The ones elsewhere finish, and so does one on the cut host, unseen.
	for _, n := range onOther {
		pe.open(n)
	}
	pe.open(onCut[0])
	pe.until("the cut host shown unreachable", 20*time.Second, func() bool {
		v, ok := pe.eng.Instance(cutHost)
		return ok && shownUnreachable(v)
	})
	shownAfter := time.Since(t0)
	t.Logf("cut host %s shown unreachable after %s", cutHost, shownAfter.Round(time.Millisecond))
	// The promise: within probe_interval + timeout_runner_call of the cut
	// (plus a margin for the engine's step and a busy machine).
	if bound := pe.cfg.Cloud.ProbeInterval + pe.cfg.Cloud.TimeoutRunnerCall + 3*time.Second; shownAfter > bound {
		t.Fatalf("the cut host was shown unreachable after %s, want within %s", shownAfter, bound)
	}
	// Stay cut well past timeout_probe (5s), counted from the first
	// failed probe.
	pe.stepFor(14*time.Second - time.Since(t0))
	for i, id := range ids {
		if c := pe.container(id); names[i] == onCut[0] || names[i] == onCut[1] {
			if c.State != queue.Running || c.Attempts != 1 {
				t.Fatalf("during the cut, %s on the cut host is %s (attempts %d), want still Running, attempt 1:%s", names[i], c.State, c.Attempts, pe.dump())
			}
		}
	}
	pe.net.heal(hi)
	t.Logf("healed after %s", time.Since(t0).Round(time.Millisecond))

	// The one that finished during the cut is collected; the other is
	// still running there.
	pe.until(onCut[0]+" collected after the heal", 3*time.Minute, func() bool {
		return pe.container(ids[indexOf(names, onCut[0])]).State.Final()
	})
	if c := pe.container(ids[indexOf(names, onCut[1])]); c.State != queue.Running || c.InstanceID != cutHost {
		t.Fatalf("after the heal %s is %s on %q, want still Running on %s:%s", onCut[1], c.State, c.InstanceID, cutHost, pe.dump())
	}
	pe.open(onCut[1])
	pe.settledClean(ids)
	for i, id := range ids {
		c := pe.container(id)
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 1 {
			t.Errorf("%s: %s exit %v attempts %d, want Complete, exit 0, one attempt", names[i], c.State, c.ExitCode, c.Attempts)
		}
		if n := pe.runs(names[i]); n != 1 {
			t.Errorf("%s's command ran %d times, want once", names[i], n)
		}
		if out, err := pe.eng.Logs(context.Background(), id, 0); err != nil || !strings.Contains(string(out.Data), "hello from "+names[i]) {
			t.Errorf("%s: logs %q, %v; want its output", names[i], out.Data, err)
		}
	}
	if t.Failed() {
		t.Log(pe.dump())
	}
}

// TestPartitionTimeoutUnreachable cuts a host for longer than
// timeout_unreachable: its container is written off and run again
// elsewhere, once, with an event that says the old attempt may still run.
func TestPartitionTimeoutUnreachable(t *testing.T) {
	t.Parallel()
	pe := newPartitionEnv(t, 2, func(c *config.Config) {
		c.Cloud.TimeoutUnreachable = 15 * time.Second
	})
	id := pe.submit("u0", 3)
	pe.until("u0 running", 3*time.Minute, func() bool { return pe.reportedRunning(id) })
	cutHost := pe.container(id).InstanceID
	hi := pe.hostIdx[cutHost]
	t0 := time.Now()
	pe.net.cut(hi)
	pe.until("u0 requeued and running elsewhere", 3*time.Minute, func() bool {
		c := pe.container(id)
		return c.State == queue.Running && c.InstanceID != "" && c.InstanceID != cutHost && pe.reportedRunning(id)
	})
	if el := time.Since(t0); el < 15*time.Second {
		t.Fatalf("u0 requeued %s after the cut, before timeout_unreachable (15s):%s", el, pe.dump())
	}
	if c := pe.container(id); c.Attempts != 2 {
		t.Fatalf("u0 has %d attempts after the requeue, want 2:%s", c.Attempts, pe.dump())
	}
	evs, _ := pe.eng.Events(0, 10000)
	found := false
	for _, ev := range evs {
		if strings.Contains(ev.Reason, "may still be running") && (ev.Target == cutHost || ev.Target == id) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no event says the old attempt may still be running:%s", pe.dump())
	}
	pe.net.heal(hi)
	// The old copy, still running on the healed host, is stopped; the new
	// one finishes.
	pe.open("u0")
	pe.settledClean([]string{id})
	c := pe.container(id)
	if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 2 {
		t.Fatalf("u0: %s exit %v attempts %d, want Complete, exit 0, attempt 2:%s", c.State, c.ExitCode, c.Attempts, pe.dump())
	}
	if n := pe.runs("u0"); n != 2 {
		t.Fatalf("u0 ran %d times, want twice (the written-off attempt and its replacement)", n)
	}
}

func indexOf(s []string, v string) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}
