//go:build linux

package ec2_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// engineOn builds, through launch (as the daemon does), an engine whose
// driver is ec2 configured with srv's endpoint; the dummy credentials come
// from the environment. The runner deployed to the instances is this test
// binary (see TestMain).
func engineOn(t *testing.T, srv *ec2test.Server, change func(*config.Config)) *launch.Running {
	t.Helper()
	srv.SetEnv(t)
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Dispatcher.StaleLockTimeout = 5 * time.Second
	cfg.Dispatcher.MaxInstances = 6
	cfg.Dispatcher.MaxContainersPerInstance = 4
	cfg.Cloud.Driver = "ec2"
	cfg.Cloud.SSHPort = srv.SSHPort()
	cfg.Cloud.EC2.Region = ec2test.Region
	cfg.Cloud.EC2.Endpoint = srv.URL()
	cfg.Cloud.EC2.ImageID = ec2test.ImageID
	cfg.Cloud.EC2.SubnetIDs = []string{"subnet-a", "subnet-b"}
	cfg.Cloud.EC2.UsePrivateIP = true
	cfg.Cloud.RunnerPath = "./dispatch-tui-runner"
	cfg.Cloud.ProbeInterval = 200 * time.Millisecond
	cfg.Cloud.SyncInterval = time.Second
	cfg.Cloud.TimeoutIdle = time.Minute
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxConcurrentCreates = 4
	cfg.InstanceTypes = []cloud.InstanceType{{Name: "small", ProviderType: "t3.small", VCPUs: 4, RAM: 4 << 30, Scratch: 10 << 30, Price: 0.04}}
	if change != nil {
		change(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := launch.New(launch.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// stepping waits with eng stepped in real time between polls, showing
// dump when it fails.
func stepping(eng *launch.Running, dump func() string) wait.With {
	return wait.With{Step: func() { eng.Step(); eng.Settle() }, Seen: dump}
}

// The engine runs 50 containers on EC2-driver instances while the endpoint
// fails a fifth of the launches and throttles a tenth of all calls, with
// EC2's quirks on (the first subnet full, said in a message; key pairs
// lagging; a launch ended at once) and EC2 reclaiming the first spot
// instance that runs containers, 2 s after its notice: every container
// completes with its exit code, and once idle every instance is
// terminated.
func TestEngineOnEC2(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{Seed: 4, ShutdownTime: time.Second}) // seed 4: the 2nd call is throttled, the 5th launch fails
	srv.Configure(func(f *ec2test.Faults) {
		f.CreateErrorRate = 0.2
		f.ThrottleRate = 0.1
		f.FullSubnets = map[string]bool{"subnet-a": true}
		f.SpotNotice = 2 * time.Second
	})
	srv.SetQuirks(func(q *ec2test.Quirks) {
		q.SubnetFullByMessage = true
		q.KeyPairLag = time.Hour
		q.LaunchTerminations = []string{"Server.InternalError"}
	})
	eng := engineOn(t, srv, func(cfg *config.Config) {
		cfg.Cloud.TimeoutIdle = 2 * time.Second
		// Types are kept sorted by price: the spot one first.
		cfg.InstanceTypes = append([]cloud.InstanceType{{Name: "small-spot", ProviderType: "t3.small", VCPUs: 4, RAM: 4 << 30, Price: 0.01, Preemptible: true}},
			cfg.InstanceTypes...)
	})
	dump := func() string {
		var b strings.Builder
		for _, v := range eng.Instances() {
			fmt.Fprintf(&b, "\n  instance %s %s containers=%v last_error=%q", v.ID, v.State, v.Containers, v.LastError)
		}
		cs, _ := eng.Containers(engine.ListOptions{})
		for _, c := range cs {
			fmt.Fprintf(&b, "\n  container %s %s inst=%s attempts=%d reason=%q", c.ID, c.State, c.InstanceID, c.Attempts, c.Reason)
		}
		if evs, err := eng.Events(0, 100000); err == nil {
			for _, ev := range evs[max(0, len(evs)-25):] {
				fmt.Fprintf(&b, "\n  event %+v", ev)
			}
		}
		fmt.Fprintf(&b, "\n  endpoint: live %v, %d calls, %d InternalError, %d RequestLimitExceeded",
			srv.Live(), srv.Calls(""), srv.Errors("InternalError"), srv.Errors("RequestLimitExceeded"))
		return b.String()
	}

	type job struct {
		id   string
		code int
	}
	var jobs []job
	// The spot jobs wait (at most 30 s) for the gate the test opens once
	// it has interrupted a spot instance running some: on a loaded
	// machine they could otherwise all end before the test sees one.
	gate := filepath.Join(t.TempDir(), "interrupted")
	for i := range 50 {
		code := i % 5
		preemptible := i%3 == 0 // on the spot type, the cheapest
		command := `sleep 0.1; echo "job $X"; exit "$X"`
		if preemptible {
			command = `i=0; while [ ! -e "$GATE" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; ` + command
		}
		c, err := eng.Submit(queue.Spec{
			Name:               fmt.Sprintf("job-%d", i),
			Command:            []string{"sh", "-c", command},
			Env:                map[string]string{"X": fmt.Sprint(code), "GATE": gate},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
			Scheduling:         queue.Scheduling{Preemptible: &preemptible},
		}, "test")
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job{c.ID, code})
	}
	interrupted := ""
	stepping(eng, dump).Until(t, "50 containers final", 90*time.Second, func() bool {
		if interrupted == "" {
			for _, v := range eng.Instances() {
				if v.Type == "small-spot" && len(v.Containers) > 0 {
					if err := srv.Interrupt(string(v.ID)); err != nil {
						t.Fatal(err)
					}
					interrupted = string(v.ID)
					if err := os.WriteFile(gate, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
		}
		for _, j := range jobs {
			if c, ok := eng.Container(j.id); !ok || !c.State.Final() {
				return false
			}
		}
		return true
	})
	used := map[string]bool{}
	for _, j := range jobs {
		c, _ := eng.Container(j.id)
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != j.code {
			t.Fatalf("container %s: %s exit %v, want Complete with exit %d:%s", j.id, c.State, c.ExitCode, j.code, dump())
		}
		if !strings.HasPrefix(c.InstanceID, "i-") {
			t.Fatalf("container %s ran on %q, not an EC2 instance", j.id, c.InstanceID)
		}
		used[c.InstanceID] = true
	}
	spots, noticeReads := 0, 0
	for _, in := range srv.Instances() {
		if in.Spot {
			spots++
			noticeReads += in.NoticeReads
		}
	}
	if srv.Errors("RequestLimitExceeded") == 0 || srv.Errors("InternalError") == 0 || interrupted == "" || noticeReads == 0 {
		t.Fatalf("faults not exercised (spot instance interrupted: %q, spot notices read %d times):%s", interrupted, noticeReads, dump())
	}
	preempted := 0
	if evs, err := eng.Events(0, 100000); err == nil {
		for _, ev := range evs {
			if ev.Kind == worker.EventPreempted {
				preempted++
			}
		}
	}
	t.Logf("%d instances used, %d launched (%d spot, notice read %d times, %d preempted events); %d calls, %d throttled, %d failed launches",
		len(used), len(srv.Instances()), spots, noticeReads, preempted, srv.Calls(""), srv.Errors("RequestLimitExceeded"), srv.Errors("InternalError"))

	// Idle instances are shut down: nothing is left running at the
	// provider.
	stepping(eng, dump).Until(t, "every instance terminated", 30*time.Second, func() bool {
		return len(srv.Live()) == 0 && len(eng.Instances()) == 0
	})
}

// Missing permissions: the create fails with a clear, permanent error
// that shows as the containers' pending reason and as an event, and the
// pool does not retry it in a loop.
func TestEngineUnauthorizedIsNotRetried(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	srv.Configure(func(f *ec2test.Faults) { f.Errors = map[string]string{"RunInstances": "UnauthorizedOperation"} })
	eng := engineOn(t, srv, nil)
	c, err := eng.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	dump := func() string {
		got, _ := eng.Container(c.ID)
		return fmt.Sprintf("\n  container %s reason %q; %d RunInstances", got.State, got.Reason, srv.Calls("RunInstances"))
	}
	stepping(eng, dump).Until(t, "the refusal shown", 10*time.Second, func() bool {
		got, _ := eng.Container(c.ID)
		return strings.Contains(got.Reason, "UnauthorizedOperation")
	})
	calls := srv.Calls("RunInstances")
	if got, _ := eng.Container(c.ID); !strings.HasPrefix(got.Reason, "cloud refused creates") {
		t.Errorf("pending reason %q", got.Reason)
	}
	for range 20 {
		eng.Step()
		eng.Settle()
		time.Sleep(20 * time.Millisecond)
	}
	if n := srv.Calls("RunInstances"); n != calls || n > 2 {
		t.Fatalf("RunInstances called %d times, then %d: retried:%s", calls, n, dump())
	}
	if got := eng.PoolStats().CloudOps["create"]["permanent"]; got != 1 {
		t.Fatalf("create errors of kind permanent: %d (%v)", got, eng.PoolStats().CloudOps)
	}
	evs, err := eng.Events(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		if strings.Contains(fmt.Sprint(ev), "UnauthorizedOperation") && strings.Contains(fmt.Sprint(ev), "permanent") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no event names the refusal: %+v", evs)
	}
}

// The endpoint's config snippet, with instance types appended, is a valid
// configuration whose driver reaches the endpoint.
func TestConfigSnippet(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	srv.SetEnv(t)
	src := srv.ConfigTOML() + `
[dispatcher]
state_dir = "` + t.TempDir() + `"

[[instance_type]]
name = "small"
provider_type = "t3.small"
vcpus = 2
ram = "2GiB"
price = 0.02
`
	cfg, err := config.Parse([]byte(src), "")
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if cfg.Cloud.Driver != "ec2" || cfg.Cloud.EC2.Endpoint != srv.URL() || cfg.Cloud.SSHPort != srv.SSHPort() {
		t.Fatalf("parsed %+v", cfg.Cloud)
	}
	r, err := launch.New(launch.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inst, err := r.Driver.Create(t.Context(), cfg.InstanceTypes[0], cloud.Tags{cloud.TagOwner: "x", cloud.TagSecret: "snippet"})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Live(); len(got) != 1 || got[0] != string(inst.ID()) {
		t.Fatalf("live at the endpoint: %v", got)
	}
}

// A spot instance interrupted under a running container: the instance
// leaves the listing, the container is requeued without spending an
// attempt and completes on another instance.
func TestEngineSpotInterruption(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	eng := engineOn(t, srv, func(cfg *config.Config) {
		cfg.InstanceTypes = []cloud.InstanceType{{Name: "spot", ProviderType: "t3.small", VCPUs: 2, RAM: 2 << 30, Price: 0.01, Preemptible: true}}
	})
	preemptible := true
	// The first run holds on (at most 60 s) until the interruption ends
	// it; the run after it ends at once. A run that simply took 2 s could
	// end before a loaded machine saw the interruption.
	dir := t.TempDir()
	c, err := eng.Submit(queue.Spec{
		Command:            []string{"sh", "-c", `if mkdir "$D/first" 2>/dev/null; then i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; fi; echo done`},
		Env:                map[string]string{"D": dir},
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
		Scheduling:         queue.Scheduling{Preemptible: &preemptible},
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	dump := func() string {
		got, _ := eng.Container(c.ID)
		return fmt.Sprintf("\n  container %s on %s attempts %d reason %q; live %v", got.State, got.InstanceID, got.Attempts, got.Reason, srv.Live())
	}
	stepping(eng, dump).Until(t, "the container's first run holding on", 20*time.Second, func() bool {
		got, _ := eng.Container(c.ID)
		_, err := os.Stat(filepath.Join(dir, "first"))
		return got.State == queue.Running && err == nil
	})
	first, _ := eng.Container(c.ID)
	for _, in := range srv.Instances() {
		if in.ID == first.InstanceID && !in.Spot {
			t.Fatalf("preemptible type launched %s on demand", in.ID)
		}
	}
	if err := srv.Interrupt(first.InstanceID); err != nil {
		t.Fatal(err)
	}
	stepping(eng, dump).Until(t, "the container complete", 30*time.Second, func() bool {
		got, _ := eng.Container(c.ID)
		return got.State.Final()
	})
	got, _ := eng.Container(c.ID)
	if got.State != queue.Complete || got.InstanceID == first.InstanceID || got.Attempts != first.Attempts {
		t.Fatalf("after the interruption:%s", dump())
	}
	stepping(eng, dump).Until(t, "the interrupted instance gone from the pool", 30*time.Second, func() bool {
		_, ok := eng.Instance(first.InstanceID)
		return !ok
	})
}

// A create whose answers are all lost (the SDK's retries included) is
// retried by the pool with the same secret, hence the same client token:
// the container runs on the one instance EC2 launched, and no second one
// is launched.
func TestEngineRetriedCreateIsOneInstance(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{})
	srv.Configure(func(f *ec2test.Faults) { f.LostLaunchResponses = ec2.DefaultMaxAttempts })
	eng := engineOn(t, srv, nil)
	c, err := eng.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	dump := func() string {
		got, _ := eng.Container(c.ID)
		var launched []string
		for _, in := range srv.Instances() {
			launched = append(launched, in.ID+" "+in.State)
		}
		return fmt.Sprintf("\n  container %s on %q reason %q; launched %v; create ops %v",
			got.State, got.InstanceID, got.Reason, launched, eng.PoolStats().CloudOps["create"])
	}
	stepping(eng, dump).Until(t, "the container complete", 30*time.Second, func() bool {
		got, _ := eng.Container(c.ID)
		return got.State.Final()
	})
	got, _ := eng.Container(c.ID)
	if in := srv.Instances(); got.State != queue.Complete || len(in) != 1 || got.InstanceID != in[0].ID {
		t.Fatalf("want the container Complete on the one instance launched:%s", dump())
	}
	if eng.PoolStats().CloudOps["create"]["other"] == 0 {
		t.Fatalf("the lost answers did not fail a create:%s", dump())
	}
}
