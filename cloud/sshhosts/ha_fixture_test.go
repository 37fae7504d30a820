//go:build linux

package sshhosts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest/faultproxy"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/view"
)

// haEnv is a cluster of the built binary: daemon nodes with [ha] enabled
// on one PostgreSQL database, over the same real sshd hosts
// (docs/design.md §11). Each node reaches PostgreSQL through a fault
// proxy of its own, and every host through that host's proxy, where the
// node is the party (its process holds the connection).
type haEnv struct {
	t       *testing.T
	bin     string
	markers string
	nodes   []*haProc
	began   time.Time

	pg       *pgtest.Server
	pgProxy  []*faultproxy.Proxy // by node
	hostVia  []*faultproxy.Proxy // by host
	hostDirs []string            // each host's work dir
	runner   string              // the runner's path in a host's work dir
}

// phase logs how far into the test a step was reached.
func (he *haEnv) phase(what string) {
	he.t.Logf("%6.1fs: %s", time.Since(he.began).Seconds(), what)
}

// haProc is one node: its config, log and API socket, and its process
// while it runs.
type haProc struct {
	env     *haEnv
	name    string
	cfgPath string
	logPath string
	addr    string // the TCP listen
	client  *api.Client
	cmd     *exec.Cmd
	exited  chan error
	pid     atomic.Int64 // the running daemon's, for the proxies (0: none)
}

// haToken is every node's API token.
const haToken = "the-test-token-of-the-cluster"

// metric is the value of an unlabelled metric on the node's /metrics
// ("" when it has none).
func (p *haProc) metric(name string) string {
	t := p.env.t
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+haToken)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s's /metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s's /metrics: %s, %v: %s", p.name, resp.Status, err, b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// haLease is the nodes' lease: the shortest the config takes plus room
// for a loaded machine's renewals.
const haLease = 3 * time.Second

func newHAEnv(t *testing.T, nodes, hosts int) *haEnv {
	t.Helper()
	return newHAEnvOn(t, nodes, hosts, pgtest.Start(t))
}

// newHAEnvOn is newHAEnv with the database on srv (pgtest.StartOwn for a
// test that restarts it).
func newHAEnvOn(t *testing.T, nodes, hosts int, srv *pgtest.Server) *haEnv {
	t.Helper()
	return newHAEnvSized(t, nodes, hosts, 2, srv)
}

// haIdle is the nodes' timeout_idle: short, for the checker's wait for
// every host released at the end of each test.
const haIdle = 2 * time.Second

// newHAEnvSized is newHAEnvOn with slots containers of one vCPU at once on
// each host (the soak's cluster is wider than the fault tests').
func newHAEnvSized(t *testing.T, nodes, hosts, slots int, srv *pgtest.Server) *haEnv {
	t.Helper()
	return newHAEnvIdle(t, nodes, hosts, slots, haIdle, srv)
}

// haClusters bounds the HA clusters that run at once: make test runs
// eight of the package's tests at a time, and at a load of 50 a third or
// fourth cluster's leader missed its 3 s lease's renewals (a takeover the
// test did not cause); two at once is what go test's default of one per
// CPU ran, with the package's other tests overlapping them.
var haClusters = make(chan struct{}, 2)

// newHAEnvIdle is newHAEnvSized with the nodes' timeout_idle idle.
func newHAEnvIdle(t *testing.T, nodes, hosts, slots int, idle time.Duration, srv *pgtest.Server) *haEnv {
	t.Helper()
	haClusters <- struct{}{}
	t.Cleanup(func() { <-haClusters }) // the first registered: run last, after the nodes stop
	dbURL := srv.NewDatabase(t)
	env := newSSHDEnv(t, hosts)
	bin, _, hash := dispatchBinary(t)
	cfg, hs := env.engineConfig(t)
	he := &haEnv{t: t, bin: bin, markers: filepath.Join(env.dir, "markers"), began: time.Now(), pg: srv, runner: cfg.Cloud.RunnerPath + "~" + hash}
	if err := os.Mkdir(he.markers, 0o755); err != nil {
		t.Fatal(err)
	}
	preinstallRunner(t, hs, he.runner, bin)
	// At the end, a driver of no owner releases whatever is still
	// claimed, killing leftovers, after the nodes stop (last-in first-out).
	newDriver(t, cfg, hs, hash, "", testLogger(t))
	he.proxyHosts(env, hs)
	for i := range nodes {
		p := &haProc{env: he, name: fmt.Sprintf("node%d", i), logPath: filepath.Join(t.TempDir(), "daemon.log"), addr: fmt.Sprintf("127.0.0.1:%d", freeport.For(t))}
		if dir := os.Getenv("HA_KEEP_LOGS"); dir != "" { // a directory to keep the nodes' logs in, to read a run's takeovers
			p.logPath = filepath.Join(dir, fmt.Sprintf("%s-%s.log", strings.ReplaceAll(t.Name(), "/", "_"), p.name))
		}
		nodeURL := he.proxyStore(dbURL)
		state := t.TempDir()
		var b strings.Builder
		fmt.Fprintf(&b, `[dispatcher]
state_dir = %q
listen = %q
token = %q
max_containers_per_instance = %d
stale_lock_timeout = "5s"

[cloud]
driver = "sshhosts"
ssh_user = %q
ssh_key_file = %q
known_hosts = %q
runner_path = "./dispatch-tui-runner"
boot_probe_command = "true"
probe_interval = "1s"
timeout_probe = "10s"
timeout_runner_call = "5s"
timeout_idle = %q
sync_interval = "1s"
max_probes_per_second = 100
max_cloud_ops_per_second = 100
max_concurrent_creates = %d

[store]
url = %q

[ha]
enabled = true
node_name = %q
lease = %q
lease_retry = "200ms"

[[instance_type]]
name = "small"
provider_type = "small"
vcpus = %d
ram = "%dGiB"
scratch = "10GiB"
price = 0.1
`, state, p.addr, haToken, slots, cfg.Cloud.SSHUser, cfg.Cloud.SSHKeyFile, filepath.Join(env.dir, "known_hosts.proxied"), idle.String(), hosts, nodeURL, p.name, haLease.String(), slots, slots)
		for i, h := range hs {
			fmt.Fprintf(&b, "\n[[cloud.sshhosts.host]]\naddress = %q\ninstance_type = %q\nwork_dir = %q\n", he.hostVia[i].Addr(), h.InstanceType, h.WorkDir)
		}
		p.cfgPath = filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(p.cfgPath, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		if p.client, err = api.Dial("unix:"+filepath.Join(state, "dispatch-tui.sock"), api.ClientOptions{}); err != nil {
			t.Fatal(err)
		}
		he.nodes = append(he.nodes, p)
		t.Cleanup(func() {
			p.signal(syscall.SIGCONT)
			if t.Failed() {
				// Each goroutine's stack, into the log printed below: a
				// node that hangs says where.
				p.stop(syscall.SIGQUIT)
			}
			p.stop(syscall.SIGKILL)
			if t.Failed() {
				b, _ := os.ReadFile(p.logPath)
				t.Logf("%s's log:\n%s", p.name, b)
			}
		})
	}
	return he
}

// start runs the node's daemon and waits until its API answers, as a
// leader or a standby.
func (p *haProc) start() {
	p.env.t.Helper()
	p.launch()
	p.awaitAPI()
}

// launch runs the node's daemon.
func (p *haProc) launch() {
	t := p.env.t
	t.Helper()
	logs, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	p.cmd = exec.Command(p.env.bin, "--daemon", "--config", p.cfgPath)
	p.cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	p.cmd.Stdout, p.cmd.Stderr = logs, logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.pid.Store(int64(p.cmd.Process.Pid))
	exited := make(chan error, 1)
	p.exited = exited
	go func() { exited <- p.cmd.Wait() }()
}

// awaitAPI waits until the launched node's API answers.
func (p *haProc) awaitAPI() {
	p.env.t.Helper()
	p.env.until(p.name+"'s API answers", 60*time.Second, func() bool {
		_, err := p.client.Summary(context.Background())
		return err == nil || strings.Contains(err.Error(), "stands by")
	})
	p.env.phase(p.name + " started")
}

func (p *haProc) signal(sig syscall.Signal) {
	if p.cmd != nil {
		p.cmd.Process.Signal(sig)
	}
}

// stop sends sig and waits for the daemon to exit.
func (p *haProc) stop(sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(wait.Budget(30 * time.Second)):
		p.cmd.Process.Kill()
		<-p.exited
		p.env.t.Errorf("%s did not exit within 30s of %s", p.name, sig)
	}
	p.cmd = nil
	p.pid.Store(0)
}

// leads reports whether the node's API answers as the leader's. A
// stopped (SIGSTOP) node does not answer: it does not lead.
func (p *haProc) leads() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// GET /v1/cluster is answered by the node itself (a standby forwards
	// the rest, so a summary answers on both): it leads when the lease it
	// reads names it, and serves as leader once its engine is open (until
	// then its summary, forwarded to itself, is refused).
	cl, err := p.client.Cluster(ctx)
	if err != nil || cl.Self != p.name || cl.Leader != p.name {
		return false
	}
	_, err = p.client.Summary(ctx)
	return err == nil
}

// leader is the node that leads now, or nil.
func (he *haEnv) leader() *haProc {
	for _, p := range he.nodes {
		if p.cmd != nil && p.leads() {
			return p
		}
	}
	return nil
}

func (he *haEnv) until(what string, timeout time.Duration, cond func() bool) {
	he.t.Helper()
	wait.With{Seen: he.dump}.Until(he.t, what, timeout, cond)
}

// containers lists every container as the leader has it (nil while none
// leads).
func (he *haEnv) containers() []view.Container {
	l := he.leader()
	if l == nil {
		return nil
	}
	cs, _, err := l.client.Containers(context.Background(), api.ListQuery{})
	if err != nil {
		return nil
	}
	return cs
}

// events is the leader's event log.
func (he *haEnv) events() []view.Event {
	l := he.leader()
	if l == nil {
		return nil
	}
	evs, err := l.client.Events(context.Background(), 0, 10000)
	if err != nil {
		return nil
	}
	return evs
}

func (he *haEnv) dump() string {
	var b strings.Builder
	for _, p := range he.nodes {
		fmt.Fprintf(&b, "\n  %s running=%v leads=%v", p.name, p.cmd != nil, p.cmd != nil && p.leads())
	}
	for _, c := range he.containers() {
		fmt.Fprintf(&b, "\n  container %s %s %s inst=%s attempts=%d runs=%d reason=%q", c.ID, c.Name, c.State, c.InstanceID, c.Attempts, len(he.runsOf(c.Name)), c.Reason)
	}
	for _, ev := range he.events() {
		fmt.Fprintf(&b, "\n  event %s %s %s %s %s: %s", ev.Time.Format("15:04:05.000"), ev.Actor, ev.Kind, ev.Target, ev.Action, ev.Reason)
	}
	return b.String()
}
