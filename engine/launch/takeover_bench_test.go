package launch

// The takeover benchmark of issue 30 (BENCHMARKS.md "Takeover at scale"):
// two daemon nodes with [ha] in this process, on one real PostgreSQL, sharing
// one fake cloud (the in-memory driver, as a cluster's nodes share the real
// one), with 100,000 containers queued and 1,000 instances each running one.
// It runs only when asked for:
//
//	go test -run='^TestTakeoverAtScale$' ./engine/launch -takeover.queued=100000
//
// A kill -9 cannot end part of a process, so it is played as what the other
// node and the database see of one: the killed node's database role loses
// its login and its connections are ended (its transactions abort, as a dead
// process's do), then its context ends; it cannot write, renew or release
// again, and its engine stops. Measured, never asserted (a test has no timed
// assertion): kill → the lease row names the standby (database time: the
// lease running out, then its next try), kill → the first start after that
// (its restart path: load, list the cloud and every runner, adopt, a pass),
// and a clean stop (SIGTERM: the context ends and the lease is released) →
// the standby holds the lease.

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/store/pgstore"
	"dispatch-tui/engine/view"
)

// takeoverClusters numbers the clusters made, for their roles' names.
var takeoverClusters atomic.Int64

var (
	takeoverQueued    = flag.Int("takeover.queued", 0, "run TestTakeoverAtScale with this many containers queued (0 = skip)")
	takeoverInstances = flag.Int("takeover.instances", 1000, "TestTakeoverAtScale's instances, each running one container")
	takeoverKills     = flag.Int("takeover.kills", 5, "TestTakeoverAtScale's kills of the leader")
	takeoverTerms     = flag.Int("takeover.sigterms", 3, "TestTakeoverAtScale's clean stops of the leader")
	takeoverResult    = flag.String("takeover.result", "", "write TestTakeoverAtScale's summary lines to this file")
	takeoverLogs      = flag.String("takeover.logs", "", "keep TestTakeoverAtScale's node logs in this directory")
	takeoverProbes    = flag.Float64("takeover.probes", 1000, "TestTakeoverAtScale's [cloud] max_probes_per_second (the config's default is 10)")
	takeoverProfile   = flag.String("takeover.cpuprofile", "", "write a CPU profile of each kill's takeover, from the kill to the first start, to this path with the kill's number appended")
)

func TestTakeoverAtScale(t *testing.T) {
	queued := *takeoverQueued
	if queued <= 0 {
		t.Skip("set -takeover.queued=N to run")
	}
	c := newTakeoverCluster(t, *takeoverInstances)
	a, b := c.nodes[0], c.nodes[1]
	a.start()
	c.until(a.name+" leads", 2*time.Minute, func() bool { return c.holder() == a.name && a.serves() })
	b.start()
	c.fill(a, queued)

	var lines []string
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		lines = append(lines, line)
	}
	var leads, starts, handovers []time.Duration
	leader, standby := a, b
	for i := range *takeoverKills {
		c.steady(leader)
		stop := c.profile(i + 1)
		l, s := c.kill(leader, standby)
		stop()
		logf("kill %d of %s: %s → %s leads %v, first start %v", i+1, leader.name, leader.name, standby.name, l.Round(time.Millisecond), s.Round(time.Millisecond))
		leads, starts = append(leads, l), append(starts, s)
		leader.start() // back, as the standby
		leader, standby = standby, leader
	}
	for i := range *takeoverTerms {
		c.steady(leader)
		h := c.sigterm(leader, standby)
		logf("SIGTERM %d of %s: %s leads %v", i+1, leader.name, standby.name, h.Round(time.Millisecond))
		handovers = append(handovers, h)
		leader.start()
		leader, standby = standby, leader
	}
	logf("queued %d, instances %d (one container each), lease %v, lease_retry %v, max_probes_per_second %g", queued, len(c.cloud.Live()), c.lease, c.retry, *takeoverProbes)
	logf("kill -9 → the standby leads: %s (target ≤ 7s)", spread(leads))
	logf("kill -9 → its first start: %s (target ≤ 8s)", spread(starts))
	logf("SIGTERM → the standby leads: %s (target ≤ 1.5s)", spread(handovers))
	if *takeoverResult != "" {
		if err := os.WriteFile(*takeoverResult, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// profile starts the CPU profile of the kill-th takeover, if asked for,
// and returns its stop.
func (c *takeoverCluster) profile(kill int) func() {
	if *takeoverProfile == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s%d", *takeoverProfile, kill))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		c.t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// spread is p50 and p99 (nearest rank) of ds, and how many.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return fmt.Sprintf("p50 %v, p99 %v (n=%d, min %v, max %v)", rank(0.5).Round(time.Millisecond),
		rank(0.99).Round(time.Millisecond), len(s), s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

// takeoverCluster is the benchmark's two nodes, their shared cloud and
// database, and the test's own view of the lease.
type takeoverCluster struct {
	t           *testing.T
	cloud       *fake.Driver
	admin       string // the database's URL as its superuser
	lease       time.Duration
	retry       time.Duration
	leaseReader *pgstore.Store
	nodes       []*takeoverNode
	instances   int
	// runner is the file deployed as the runner: small, as the fake cloud
	// hashes each install under its one lock (a real instance hashes its
	// own upload), which for the real binary would serialise the fill.
	runner string
	began  time.Time
}

// takeoverNode is one node: its config and, while it runs, its daemon.
type takeoverNode struct {
	c      *takeoverCluster
	name   string
	role   string // its database role: the node's name, unique on the server
	cfg    string // the config file
	log    string
	client *api.Client // over its socket
	runner string      // deployed as the runner; "" = the cluster's
	cancel context.CancelFunc
	done   chan error
}

func newTakeoverCluster(t *testing.T, instances int) *takeoverCluster {
	url := pgtest.NewDatabase(t)
	c := &takeoverCluster{
		t: t, admin: url, instances: instances, began: time.Now(),
		cloud: fake.New(fake.Options{Clock: clock.Real{}}),
	}
	c.runner = filepath.Join(t.TempDir(), "runner")
	if err := os.WriteFile(c.runner, []byte("the benchmark's runner: the fake cloud runs none\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	c.lease, c.retry = def.HA.Lease, def.HA.LeaseRetry
	logDir := *takeoverLogs
	if logDir == "" {
		logDir = t.TempDir()
	}
	for i := range 2 {
		n := &takeoverNode{c: c, name: fmt.Sprintf("node%d", i), log: filepath.Join(logDir, fmt.Sprintf("node%d.log", i))}
		// Roles are the server's, not the database's: the clusters of
		// tests run in parallel each have their own.
		n.role = fmt.Sprintf("%s_%d", n.name, takeoverClusters.Add(1))
		c.sql("CREATE ROLE " + n.role + " LOGIN SUPERUSER")
		t.Cleanup(func() { c.sql("DROP OWNED BY " + n.role + "; DROP ROLE " + n.role) })
		state := t.TempDir()
		port := freeport.For(t)
		body := fmt.Sprintf(`[dispatcher]
state_dir = %q
listen = "127.0.0.1:%d"
token = "the-benchmark-token"
max_instances = %d
max_containers_per_instance = 1

[cloud]
driver = "fake"
max_probes_per_second = %g
max_cloud_ops_per_second = 1000
max_concurrent_creates = 100
timeout_idle = "10m"

[store]
url = %q

[ha]
enabled = true
node_name = %q

[[instance_type]]
name = "small"
vcpus = 1
ram = "2GiB"
scratch = "10GiB"
price = 0.1
`, state, port, instances, *takeoverProbes, strings.Replace(url, "postgres@", n.role+"@", 1), n.name)
		n.cfg = filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(n.cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		if n.client, err = api.Dial("unix:"+filepath.Join(state, "dispatch-tui.sock"), api.ClientOptions{}); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
		t.Cleanup(n.stop)
	}
	t.Cleanup(func() {
		if c.leaseReader != nil {
			c.leaseReader.Close()
		}
	})
	return c
}

// sql runs one statement as the database's superuser.
func (c *takeoverCluster) sql(stmt string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		c.t.Fatalf("connect as the superuser: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, stmt); err != nil {
		c.t.Fatalf("%s: %v", stmt, err)
	}
}

// holder is the node the lease row names while it is valid ("" when none
// holds it), by the database's clock.
func (c *takeoverCluster) holder() string {
	if c.leaseReader == nil {
		s, err := pgstore.Open(pgstore.Options{URL: c.admin})
		if err != nil {
			return ""
		}
		c.leaseReader = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := c.leaseReader.Holder(ctx)
	if err != nil || !h.Valid {
		return ""
	}
	return h.Node
}

func (c *takeoverCluster) until(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	wait.Until(c.t, what, timeout, cond)
}

// start runs the node's daemon in this process until stop or kill.
func (n *takeoverNode) start() {
	t := n.c.t
	t.Helper()
	cfg, err := config.Load(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	opts := Options{
		Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		RunnerBinary: cmp.Or(n.runner, n.c.runner),
	}
	// Every term of either node drives the cluster's one fake cloud.
	shared := func(*config.Config, engine.ClusterIdentity, string, *slog.Logger) (*Driver, error) {
		return &Driver{Set: n.c.cloud, NewExecutor: n.c.cloud.Executor, InMemory: true}, nil
	}
	go func() {
		defer logs.Close()
		n.done <- runHA(ctx, opts, shared)
	}()
	n.c.until(n.name+"'s API answers", time.Minute, func() bool {
		_, err := n.client.Cluster(context.Background())
		return err == nil
	})
}

// serves reports whether the node serves as the leader (its engine open).
func (n *takeoverNode) serves() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := n.client.Cluster(ctx)
	if err != nil || cl.Leader != n.name {
		return false
	}
	_, err = n.client.Summary(ctx)
	return err == nil
}

// stop ends the node's daemon as SIGTERM does, and waits for it.
func (n *takeoverNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if err := <-n.done; err != nil {
		n.c.t.Logf("%s stopped: %v", n.name, err)
	}
	n.cancel = nil
}

// fill submits queued containers to the leader and waits until every
// instance runs one.
func (c *takeoverCluster) fill(leader *takeoverNode, queued int) {
	t := c.t
	total := queued + c.instances
	began := time.Now()
	const batch = 2000 // a request body stays under the API's 1 MiB
	for i := 0; i < total; i += batch {
		specs := make([]view.Spec, 0, batch)
		for j := i; j < min(i+batch, total); j++ {
			specs = append(specs, view.Spec{
				Name:               fmt.Sprintf("c%06d", j),
				Command:            fake.Cmd(runFor(j), 0),
				RuntimeConstraints: view.Constraints{VCPUs: 1, RAM: 256 << 20},
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		_, err := leader.client.SubmitBatch(ctx, specs)
		cancel()
		if err != nil {
			t.Fatalf("submit containers %d–%d: %v", i, i+len(specs), err)
		}
	}
	t.Logf("submitted %d in %v", total, time.Since(began).Round(time.Millisecond))
	c.until(fmt.Sprintf("%d instances each running a container", c.instances), 10*time.Minute, func() bool {
		return len(c.cloud.RunningAnywhere()) >= c.instances*9/10
	})
	t.Logf("filled: %d instances, %d running, in %v", len(c.cloud.Live()), len(c.cloud.RunningAnywhere()), time.Since(began).Round(time.Millisecond))
}

// runFor is how long container j runs: 10–50 s, spread so that exits
// come steadily (about 30 a second over 1,000 instances), never in waves.
// Long enough that the queue does not drain, short enough that slots are
// free by the time a new leader's first pass comes: it has work to start.
func runFor(j int) time.Duration {
	return 10*time.Second + time.Duration(j*7919%40000)*time.Millisecond
}

// steady waits until the leader has led long enough to have started
// containers of its own (its restart path done) and holds the lease.
func (c *takeoverCluster) steady(leader *takeoverNode) {
	c.until(leader.name+" leads and starts containers", 5*time.Minute, func() bool {
		return c.holder() == leader.name && leader.serves()
	})
	from := c.cloud.Stats().Starts
	c.until(leader.name+" starts containers", 5*time.Minute, func() bool {
		return c.cloud.Stats().Starts >= from+20
	})
}

// measureUntil polls cond finely (it is what is measured) and returns how
// long after from it first held.
func (c *takeoverCluster) measureUntil(what string, from time.Time, cond func() bool) time.Duration {
	c.t.Helper()
	deadline := from.Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v", what, 5*time.Minute)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(from)
}

// kill plays a kill -9 of leader (see the file's comment) and measures the
// standby's takeover: until it holds the lease, and until its first start.
func (c *takeoverCluster) kill(leader, standby *takeoverNode) (leads, firstStart time.Duration) {
	at := time.Now()
	c.cutFromDatabase(leader)
	leader.cancel()
	var stopped sync.WaitGroup
	stopped.Go(func() {
		if err := <-leader.done; err != nil {
			c.t.Logf("%s, killed, stopped: %v", leader.name, err)
		}
	})
	leads = c.measureUntil(standby.name+" holds the lease", at, func() bool { return c.holder() == standby.name })
	// The killed node acts no more once the lease is another's: every
	// start from now on is the new leader's.
	from := c.cloud.Stats().Starts
	firstStart = c.measureUntil(standby.name+" starts a container", at, func() bool { return c.cloud.Stats().Starts > from })
	stopped.Wait()
	leader.cancel = nil
	c.sql("ALTER ROLE " + leader.role + " LOGIN")
	return leads, firstStart
}

// cutFromDatabase is what the database sees of n's kill -9: its role loses
// its login and its sessions end (their transactions abort). Undone by
// ALTER ROLE … LOGIN.
func (c *takeoverCluster) cutFromDatabase(n *takeoverNode) {
	c.sql("ALTER ROLE " + n.role + " NOLOGIN")
	c.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + n.role + "'")
}

// sigterm stops leader cleanly and measures until the standby holds the
// lease.
func (c *takeoverCluster) sigterm(leader, standby *takeoverNode) time.Duration {
	at := time.Now()
	leader.cancel()
	d := c.measureUntil(standby.name+" holds the lease", at, func() bool { return c.holder() == standby.name })
	if err := <-leader.done; err != nil {
		c.t.Logf("%s stopped: %v", leader.name, err)
	}
	leader.cancel = nil
	return d
}
