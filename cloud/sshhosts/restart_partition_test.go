//go:build linux

package sshhosts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// The restart path during a partition (docs/design.md §10.1, "At most
// once"): the built binary runs as a daemon over hosts in network
// namespaces; one host is cut while its containers run, the daemon is
// killed and started again, and the host must be listed, unreachable, with
// its containers still Running, until it answers again.

// restartEnv is a daemon of the built binary on hosts in network
// namespaces, with the markers and gates of partitionEnv's containers.
type restartEnv struct {
	t       *testing.T
	net     *partitionNet
	bin     string
	cfgPath string
	logPath string
	markers string
	gates   string
	hostIdx map[string]int
	daemon  *exec.Cmd
	exited  chan error
	client  *api.Client
}

func newRestartEnv(t *testing.T, hosts int) *restartEnv {
	t.Helper()
	pn := newPartitionNet(t, hosts)
	env := newSSHDEnvAt(t, hosts, func(i int) (string, string) { return pn.netns[i], pn.ips[i] })
	bin, _, hash := dispatchBinary(t)
	cfg, hs := env.engineConfig(t)
	preinstallRunner(t, hs, cfg.Cloud.RunnerPath+"~"+hash, bin)
	re := &restartEnv{t: t, net: pn, bin: bin, markers: filepath.Join(env.dir, "markers"), gates: filepath.Join(env.dir, "gates"),
		logPath: filepath.Join(t.TempDir(), "daemon.log"), hostIdx: map[string]int{}}
	for _, d := range []string{re.markers, re.gates} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range env.servers {
		re.hostIdx[string(InstanceID(s.addr))] = i
	}
	// At the end: the daemon stops first, every link comes up, then a
	// driver of no owner releases whatever is still claimed, killing
	// leftovers, while sshd still runs (cleanups run last-in first-out).
	newDriver(t, cfg, hs, hash, "", testLogger(t))
	t.Cleanup(func() {
		for i := range pn.outer {
			ipCmd("link", "set", pn.outer[i], "up")
		}
	})
	t.Cleanup(func() {
		re.stop(syscall.SIGKILL)
		if t.Failed() {
			b, _ := os.ReadFile(re.logPath)
			t.Logf("daemon log:\n%s", b)
		}
	})

	var b strings.Builder
	fmt.Fprintf(&b, `[dispatcher]
state_dir = %q
max_containers_per_instance = 2
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
timeout_idle = "2s"
sync_interval = "1s"
max_probes_per_second = 100
max_cloud_ops_per_second = 100
max_concurrent_creates = %d

[[instance_type]]
name = "small"
provider_type = "small"
vcpus = 2
ram = "2GiB"
scratch = "10GiB"
price = 0.1
`, cfg.Dispatcher.StateDir, cfg.Cloud.SSHUser, cfg.Cloud.SSHKeyFile, cfg.Cloud.KnownHosts, hosts)
	for _, h := range hs {
		fmt.Fprintf(&b, "\n[[cloud.sshhosts.host]]\naddress = %q\ninstance_type = %q\nwork_dir = %q\n", h.Address, h.InstanceType, h.WorkDir)
	}
	re.cfgPath = filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(re.cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	re.client, err = api.Dial("unix:"+filepath.Join(cfg.Dispatcher.StateDir, "dispatch-tui.sock"), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// start runs the daemon and waits until its API answers.
func (re *restartEnv) start() {
	re.t.Helper()
	logs, err := os.OpenFile(re.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		re.t.Fatal(err)
	}
	defer logs.Close()
	re.daemon = exec.Command(re.bin, "--daemon", "--config", re.cfgPath)
	re.daemon.Stdout, re.daemon.Stderr = logs, logs
	if err := re.daemon.Start(); err != nil {
		re.t.Fatal(err)
	}
	exited := make(chan error, 1)
	re.exited = exited
	go func() { exited <- re.daemon.Wait() }()
	re.until("the daemon's API answers", 60*time.Second, func() bool {
		_, err := re.client.Summary(context.Background())
		return err == nil
	})
}

// stop sends sig to the daemon and waits for it to exit.
func (re *restartEnv) stop(sig syscall.Signal) {
	if re.daemon == nil {
		return
	}
	re.daemon.Process.Signal(sig)
	select {
	case <-re.exited:
	case <-time.After(wait.Budget(30 * time.Second)):
		re.daemon.Process.Kill()
		<-re.exited
		re.t.Errorf("the daemon did not exit within 30s of %s", sig)
	}
	re.daemon = nil
}

func (re *restartEnv) submit(name string) string {
	re.t.Helper()
	c, err := re.client.Submit(context.Background(), gatedSpec(re.markers, re.gates, name, 3))
	if err != nil {
		re.t.Fatal(err)
	}
	return c.ID
}

func (re *restartEnv) open(name string) { re.t.Helper(); openGate(re.t, re.gates, name) }

func (re *restartEnv) runs(name string) int { return gatedRuns(re.t, re.markers, name) }

func (re *restartEnv) container(id string) view.Container {
	c, err := re.client.Container(context.Background(), id)
	if err != nil {
		re.t.Logf("container %s: %v", id, err)
	}
	return c
}

func (re *restartEnv) instance(id string) (view.Instance, bool) {
	vs, err := re.client.Instances(context.Background())
	if err != nil {
		return view.Instance{}, false
	}
	for _, v := range vs {
		if string(v.ID) == id {
			return v, true
		}
	}
	return view.Instance{}, false
}

func (re *restartEnv) dump() string {
	var b strings.Builder
	ctx := context.Background()
	vs, err := re.client.Instances(ctx)
	if err != nil {
		fmt.Fprintf(&b, "\n  instances: %v", err)
	}
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  instance %s %s containers=%v unreachable_since=%v last_error=%q", v.ID, v.State, v.Containers, v.UnreachableSince, v.LastError)
	}
	cs, _, err := re.client.Containers(ctx, api.ListQuery{})
	if err != nil {
		fmt.Fprintf(&b, "\n  containers: %v", err)
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  container %s %s %s inst=%s attempts=%d runs=%d reason=%q", c.ID, c.Name, c.State, c.InstanceID, c.Attempts, re.runs(c.Name), c.Reason)
	}
	evs, err := re.client.Events(ctx, 0, 10000)
	if err != nil {
		fmt.Fprintf(&b, "\n  events: %v", err)
	}
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  event %s %s %s %s %s: %s", ev.Time.Format("15:04:05.000"), ev.Actor, ev.Kind, ev.Target, ev.Action, ev.Reason)
	}
	return b.String()
}

// until polls cond until it holds.
func (re *restartEnv) until(what string, timeout time.Duration, cond func() bool) {
	re.t.Helper()
	wait.With{Seen: re.dump}.Until(re.t, what, timeout, cond)
}

// TestRestartDuringPartitionRunsNothingTwice cuts a host with two running
// containers, stops the daemon with SIGKILL and starts it again while the
// host is still cut, then does the same with SIGTERM. Each time the
// restarted daemon must list the host, unreachable, and keep its
// containers Running (on it, first attempt) for as long as the cut lasts;
// after the heal every command has run once and ended Complete 0 with its
// output.
func TestRestartDuringPartitionRunsNothingTwice(t *testing.T) {
	t.Parallel()
	re := newRestartEnv(t, 2)
	re.start()
	names := []string{"r0", "r1", "r2", "r3"}
	var ids []string
	for _, n := range names {
		ids = append(ids, re.submit(n))
	}
	re.until("all four running on the hosts", 3*time.Minute, func() bool {
		for i, id := range ids {
			if re.container(id).State != queue.Running || re.runs(names[i]) != 1 {
				return false
			}
		}
		return true
	})
	cutHost := re.container(ids[0]).InstanceID
	var onCut, onOther []int
	for i, id := range ids {
		if re.container(id).InstanceID == cutHost {
			onCut = append(onCut, i)
		} else {
			onOther = append(onOther, i)
		}
	}
	if len(onCut) != 2 || len(onOther) != 2 {
		t.Fatalf("want two containers per host, got %v on %s:%s", onCut, cutHost, re.dump())
	}
	hi := re.hostIdx[cutHost]
	re.net.cut(hi)
	// The ones elsewhere finish; so does one on the cut host, unseen.
	for _, i := range onOther {
		re.open(names[i])
	}
	re.open(names[onCut[0]])

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		re.stop(sig)
		re.start()
		// Held for well past probe_interval × 3 (1s), sync_interval (1s)
		// and stale_lock_timeout (5s): the old code requeued 5 s after the
		// restart.
		const window = 12 * time.Second
		start := time.Now()
		shown := false
		for time.Since(start) < window {
			for _, i := range onCut {
				c := re.container(ids[i])
				if c.State != queue.Running || c.InstanceID != cutHost || c.Attempts != 1 {
					t.Fatalf("%s after a restart on %s, while its host is cut: %s on %q, attempt %d; want Running on %s, attempt 1:%s",
						names[i], sig, c.State, c.InstanceID, c.Attempts, cutHost, re.dump())
				}
				if n := re.runs(names[i]); n != 1 {
					t.Fatalf("%s's command ran %d times during the cut:%s", names[i], n, re.dump())
				}
			}
			if v, ok := re.instance(cutHost); ok && !v.UnreachableSince.IsZero() && v.LastError != "" {
				shown = true
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !shown {
			t.Fatalf("after a restart on %s, the cut host was not listed unreachable within %s:%s", sig, window, re.dump())
		}
	}
	re.net.heal(hi)

	re.until(names[onCut[0]]+", which ended during the cut, collected after the heal", 3*time.Minute, func() bool {
		return re.container(ids[onCut[0]]).State.Final()
	})
	if c := re.container(ids[onCut[1]]); c.State != queue.Running || c.InstanceID != cutHost {
		t.Fatalf("after the heal %s is %s on %q, want still Running on %s:%s", names[onCut[1]], c.State, c.InstanceID, cutHost, re.dump())
	}
	re.open(names[onCut[1]])
	re.until("all containers final", 3*time.Minute, func() bool {
		for _, id := range ids {
			if !re.container(id).State.Final() {
				return false
			}
		}
		return true
	})
	for i, id := range ids {
		c := re.container(id)
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 1 {
			t.Errorf("%s: %s exit %v attempts %d reason %q, want Complete, exit 0, one attempt", names[i], c.State, c.ExitCode, c.Attempts, c.Reason)
		}
		if n := re.runs(names[i]); n != 1 {
			t.Errorf("%s's command ran %d times, want once", names[i], n)
		}
		var out bytes.Buffer
		if err := re.client.Logs(context.Background(), id, 0, false, &out); err != nil || !strings.Contains(out.String(), "hello from "+names[i]) {
			t.Errorf("%s: logs %q, %v; want its output", names[i], out.String(), err)
		}
	}
	re.until("every host released once idle", 3*time.Minute, func() bool {
		vs, err := re.client.Instances(context.Background())
		return err == nil && len(vs) == 0
	})
	if t.Failed() {
		t.Log(re.dump())
	}
	re.stop(syscall.SIGTERM)
}
