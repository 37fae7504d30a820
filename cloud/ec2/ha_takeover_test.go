//go:build linux

package ec2_test

// Two dispatcher nodes with [ha] on one real PostgreSQL and one EC2
// endpoint: cloud creates and destroys across a takeover (docs/design.md
// §11), with the endpoint's own record of who asked for what, and when.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/view"
)

// haNode is one daemon node of the test's cluster, run in this process.
type haNode struct {
	t      *testing.T
	name   string
	cfg    string
	client *api.Client
	log    *lostAt
	logDir string
	cancel context.CancelFunc
	done   chan error
}

// lostAt is a node's log handler that also keeps when its elector said
// it no longer leads: its lease ran out on its own clock then at the
// latest.
type lostAt struct {
	slog.Handler
	mu *sync.Mutex
	at *time.Time
}

func (h *lostAt) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "ha: no longer leading" {
		h.mu.Lock()
		if h.at.IsZero() {
			*h.at = r.Time
		}
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h *lostAt) WithAttrs(as []slog.Attr) slog.Handler {
	return &lostAt{h.Handler.WithAttrs(as), h.mu, h.at}
}

func (h *lostAt) WithGroup(name string) slog.Handler {
	return &lostAt{h.Handler.WithGroup(name), h.mu, h.at}
}

func (h *lostAt) when() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return *h.at
}

// newHANode writes node name's config: the ec2 driver on srv, reached at
// srv.URLAs(name) so that the endpoint tells the nodes' requests apart;
// the store at db as the node's own role; the key all nodes share.
func newHANode(t *testing.T, srv *ec2test.Server, db, keyFile, name string) *haNode {
	t.Helper()
	state := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	body := fmt.Sprintf(`[dispatcher]
state_dir = %q
listen = "127.0.0.1:%d"
token = "the-ha-test-token"
max_instances = %d
max_containers_per_instance = 2

[cloud]
driver = "ec2"
ssh_port = %d
ssh_key_file = %q
runner_path = "./dispatch-tui-runner"
probe_interval = "200ms"
sync_interval = "500ms"
timeout_idle = "3s"
max_probes_per_second = 100
max_cloud_ops_per_second = 100
max_concurrent_creates = 2

[cloud.ec2]
region = %q
endpoint = %q
image_id = %q
subnet_ids = ["subnet-a", "subnet-b"]
use_private_ip = true

[store]
url = %q

[ha]
enabled = true
node_name = %q

[[instance_type]]
name = "small"
provider_type = "t3.small"
vcpus = 2
ram = "2GiB"
price = 0.02
`, state, port, haInstances, srv.SSHPort(), keyFile, ec2test.Region, srv.URLAs(name), ec2test.ImageID,
		strings.Replace(db, "postgres@", name+"@", 1), name)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := api.Dial("unix:"+filepath.Join(state, "dispatch-tui.sock"), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := &haNode{t: t, name: name, cfg: cfg, client: client, logDir: logDir(t)}
	t.Cleanup(n.stop)
	return n
}

// logDir keeps the nodes' logs: kept when the test fails, and named.
func logDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ec2-ha-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the nodes' logs: %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// haInstances is each node's max_instances: the cluster's cap.
const haInstances = 4

// start runs the node's daemon until stop.
func (n *haNode) start() {
	t := n.t
	t.Helper()
	cfg, err := config.Load(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.OpenFile(filepath.Join(n.logDir, n.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	n.log = &lostAt{Handler: slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}), mu: &sync.Mutex{}, at: new(time.Time)}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	go func() {
		defer logs.Close()
		n.done <- launch.RunDaemon(ctx, launch.Options{Config: cfg, Logger: slog.New(n.log)})
	}()
	wait.Until(t, n.name+"'s API answering", time.Minute, func() bool {
		_, err := n.client.Cluster(context.Background())
		return err == nil
	})
}

func (n *haNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if err := <-n.done; err != nil {
		n.t.Logf("%s stopped: %v", n.name, err)
	}
	n.cancel = nil
}

// leads reports whether the node serves as the leader (its engine open),
// and with which epoch.
func (n *haNode) leads() (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := n.client.Cluster(ctx)
	if err != nil || cl.Leader != n.name {
		return 0, false
	}
	if _, err := n.client.Summary(ctx); err != nil {
		return 0, false
	}
	return cl.Epoch, true
}

// sharedKey writes the client key every node logs in to the instances
// with: a node taking over reaches the instances another node created.
func sharedKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "dispatch-tui ha test")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client_key")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// adminSQL runs one statement on the database as its superuser.
func adminSQL(t *testing.T, db, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("connect as the superuser: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// The leader, A, is cut from the database (its login refused, its
// sessions ended, its process left running: a split brain) while its
// creates are in flight at the endpoint; B takes over. At the endpoint:
// A sends no create or terminate once its lease ran out on its own clock;
// every create carries its node's epoch tag, each instance is launched
// once (one per secret, one per client token), and B adopted A's
// instances (it terminated each once idle); every container ends Complete, having run as often as its
// attempts say; once idle, no instance is left.
func TestHATakeoverOnEC2(t *testing.T) {
	db := pgtest.NewDatabase(t)
	srv := ec2test.Start(t, ec2test.Options{})
	srv.SetEnv(t)
	// Creates take a while at the endpoint, two at a time: some of A's
	// are in flight when it is cut.
	srv.Configure(func(f *ec2test.Faults) { f.ActionLatency = map[string]time.Duration{"RunInstances": time.Second} })
	key := sharedKey(t)
	var nodes []*haNode
	for _, name := range []string{"node_a", "node_b"} {
		adminSQL(t, db, "CREATE ROLE "+name+" LOGIN SUPERUSER")
		t.Cleanup(func() { adminSQL(t, db, "DROP OWNED BY "+name+"; DROP ROLE "+name) })
		nodes = append(nodes, newHANode(t, srv, db, key, name))
	}
	a, b := nodes[0], nodes[1]
	var epochA, epochB int64
	a.start()
	wait.Until(t, a.name+" leading", time.Minute, func() bool {
		e, ok := a.leads()
		epochA = e
		return ok
	})
	b.start()

	// Eight containers, two to an instance: the cluster's four
	// instances. Each appends a line to its marker file per run.
	marks := t.TempDir()
	var specs []view.Spec
	for i := range 2 * haInstances {
		name := fmt.Sprintf("c%d", i)
		specs = append(specs, view.Spec{
			Name:               name,
			Command:            []string{"sh", "-c", `echo run >> "$M/$N"; sleep 2`},
			Env:                map[string]string{"M": marks, "N": name},
			RuntimeConstraints: view.Constraints{VCPUs: 1, RAM: 256 << 20},
		})
	}
	if _, err := a.client.SubmitBatch(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	of := func(client, action string) []ec2test.Request {
		var out []ec2test.Request
		for _, r := range srv.Requests(action) {
			if r.Client == client {
				out = append(out, r)
			}
		}
		return out
	}
	wait.Until(t, "an instance of "+a.name+"'s launched", time.Minute, func() bool {
		for _, in := range srv.Instances() {
			if in.Tags[cloud.TagEpoch] == strconv.FormatInt(epochA, 10) {
				return true
			}
		}
		return false
	})

	// Cut A from the database, leaving its process running.
	cut := time.Now()
	adminSQL(t, db, "ALTER ROLE "+a.name+" NOLOGIN")
	adminSQL(t, db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '"+a.name+"'")
	wait.Until(t, b.name+" leading", time.Minute, func() bool {
		e, ok := b.leads()
		epochB = e
		return ok
	})
	t.Logf("%s cut at %s; %s leads with epoch %d (was %d) %v later", a.name, cut.Format("15:04:05.000"), b.name, epochB, epochA, time.Since(cut).Round(time.Millisecond))

	dump := func() string {
		var s strings.Builder
		cs, _, _ := b.client.Containers(context.Background(), api.ListQuery{})
		for _, c := range cs {
			fmt.Fprintf(&s, "\n  container %s %s on %s attempts %d reason %q", c.Name, c.State, c.InstanceID, c.Attempts, c.Reason)
		}
		for _, r := range srv.Requests("") {
			if r.Action == "RunInstances" || r.Action == "TerminateInstances" {
				fmt.Fprintf(&s, "\n  %s %s %s %v epoch %s %s", r.At.Format("15:04:05.000"), r.Client, r.Action, r.Instances, r.Tags[cloud.TagEpoch], r.Error)
			}
		}
		for _, in := range srv.Instances() {
			fmt.Fprintf(&s, "\n  instance %s %s epoch %s", in.ID, in.State, in.Tags[cloud.TagEpoch])
		}
		fmt.Fprintf(&s, "\n  %s lost its lease at %s", a.name, a.log.when().Format("15:04:05.000"))
		return s.String()
	}
	wait.With{Seen: dump}.Until(t, "every container final", time.Minute, func() bool {
		cs, _, err := b.client.Containers(context.Background(), api.ListQuery{})
		if err != nil || len(cs) != len(specs) {
			return false
		}
		for _, c := range cs {
			if !c.State.Final() {
				return false
			}
		}
		return true
	})
	wait.With{Seen: dump}.Until(t, "no instance left", time.Minute, func() bool { return len(srv.Live()) == 0 })

	cs, _, err := b.client.Containers(context.Background(), api.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		runs := 0
		if b, err := os.ReadFile(filepath.Join(marks, c.Name)); err == nil {
			runs = strings.Count(string(b), "run\n")
		}
		if c.State != view.Complete || runs != c.Attempts {
			t.Errorf("container %s: %s, ran %d times, %d attempts recorded", c.Name, c.State, runs, c.Attempts)
		}
	}

	// A's own clock: it said it no longer leads at lost, its lease
	// having run out by then. Nothing of A's may reach the endpoint
	// after that.
	lost := a.log.when()
	if lost.IsZero() {
		t.Fatalf("%s never said it lost its lease:%s", a.name, dump())
	}
	for _, action := range []string{"RunInstances", "TerminateInstances", "CreateTags", "DeleteTags"} {
		for _, r := range of(a.name, action) {
			if r.At.After(lost) {
				t.Errorf("%s's %s %v arrived at %s, after it lost its lease at %s", a.name, action, r.Instances,
					r.At.Format("15:04:05.000"), lost.Format("15:04:05.000"))
			}
		}
	}
	// Every create carries the epoch of the node that sent it: A's, or
	// one of B's terms (on a loaded machine B may lose its lease and
	// take it back, with a higher epoch).
	for _, r := range srv.Requests("RunInstances") {
		got, _ := strconv.ParseInt(r.Tags[cloud.TagEpoch], 10, 64)
		if r.Client == a.name && got != epochA || r.Client == b.name && got < epochB || r.Client != a.name && r.Client != b.name {
			t.Errorf("%s's create %s carries epoch %q; %s led with %d, %s from %d", r.Client, r.ClientToken, r.Tags[cloud.TagEpoch], a.name, epochA, b.name, epochB)
		}
	}
	// One instance per secret and per client token.
	launched := srv.Instances()
	secrets := map[string]string{}
	for _, in := range launched {
		if prev, ok := secrets[in.Secret]; ok {
			t.Errorf("instances %s and %s launched for one create (secret)", prev, in.ID)
		}
		secrets[in.Secret] = in.ID
	}
	tokens := map[string]string{}
	for _, r := range srv.Requests("RunInstances") {
		for _, id := range r.Instances {
			if prev, ok := tokens[r.ClientToken]; ok && prev != id {
				t.Errorf("client token %s launched %s and %s", r.ClientToken, prev, id)
			}
			tokens[r.ClientToken] = id
		}
	}
	byA := 0
	for _, in := range launched {
		if in.Tags[cloud.TagEpoch] == strconv.FormatInt(epochA, 10) {
			byA++
		}
	}
	if byA == 0 {
		t.Errorf("%d instances launched, none by %s: nothing to adopt", len(launched), a.name)
	}
	t.Logf("%d instances launched, %d by %s", len(launched), byA, a.name)
	// B adopted A's instances: it terminated them once idle (A could
	// not: it had lost its lease before any went idle).
	endedBy := map[string]string{}
	for _, r := range srv.Requests("TerminateInstances") {
		for _, id := range r.Instances {
			endedBy[id] = r.Client
		}
	}
	for _, in := range launched {
		if in.Tags[cloud.TagEpoch] == strconv.FormatInt(epochA, 10) && endedBy[in.ID] != b.name {
			t.Errorf("%s's instance %s terminated by %q, not by %s", a.name, in.ID, endedBy[in.ID], b.name)
		}
	}
	if t.Failed() {
		t.Log(dump())
	}
}
