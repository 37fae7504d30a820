package launch

// The throughput benchmark of docs/design.md §9: containers running `true` taken
// from submit to Complete through real SSH on the local driver. It runs
// only when asked for (make bench-e2e):
//
//	go test -run='^TestLocalThroughput$' -count=1 -v ./engine/launch -throughput.containers=20000

import (
	"flag"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
)

var (
	throughputN     = flag.Int("throughput.containers", 0, "run TestLocalThroughput with this many `true` containers (0 = skip)")
	throughputVCPUs = flag.Int("throughput.vcpus", 256, "vCPUs per instance in TestLocalThroughput (each container takes 1)")
)

func TestLocalThroughput(t *testing.T) {
	n := *throughputN
	if n <= 0 {
		t.Skip("set -throughput.containers=N to run (make bench-e2e)")
	}
	cfg := e2eConfig(t.TempDir())
	cfg.Cloud.ProbeInterval = 100 * time.Millisecond
	cfg.Cloud.MaxProbesPerSecond = 0
	cfg.Containers.KeepFinished = 0 // the test counts every Complete container
	cfg.InstanceTypes = []cloud.InstanceType{{Name: "big", ProviderType: "big", VCPUs: *throughputVCPUs, RAM: 1 << 40, Scratch: 1 << 40, Price: 0.1}}
	r, _ := startEngine(t, cfg)

	// Warm up: boot the instances and deploy the runner before timing.
	warm := make([]queue.Spec, 4*cfg.Dispatcher.MaxInstances)
	for i := range warm {
		warm[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: *throughputVCPUs}}
	}
	if _, err := r.SubmitBatch(warm, "bench"); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "warm-up containers Complete", 2*time.Minute, func() bool {
		return r.Summary().Containers[queue.Complete] == len(warm)
	})

	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}}
	}
	t0 := time.Now()
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		if _, err := r.SubmitBatch(specs[i:min(i+chunk, n)], "bench"); err != nil {
			t.Fatal(err)
		}
	}
	submitted := time.Since(t0)
	want := len(warm) + n
	last, lastAt := 0, time.Now()
	deadline := time.Now().Add(time.Duration(n)*20*time.Millisecond + time.Minute)
	for {
		s := r.Summary()
		done := s.Containers[queue.Complete]
		if done >= want {
			break
		}
		if done != last {
			last, lastAt = done, time.Now()
		}
		if time.Now().After(deadline) || time.Since(lastAt) > 30*time.Second {
			t.Fatalf("stuck at %d of %d Complete after %s: %v", done-len(warm), n, time.Since(t0).Round(time.Millisecond), s.Containers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(t0)
	ps := r.PoolStats()
	t.Logf("%d containers submit→Complete in %s (submit %s): %.0f containers/s; probes %d (mean %s), starts %d",
		n, took.Round(time.Millisecond), submitted.Round(time.Millisecond), float64(n)/took.Seconds(),
		ps.Probes, (ps.ProbeTime / time.Duration(max(ps.Probes, 1))).Round(time.Microsecond), ps.Starts)
	for _, st := range []queue.State{queue.Cancelled, queue.Queued} {
		if c := r.Summary().Containers[st]; c > 0 {
			t.Errorf("%d containers %s", c, st)
		}
	}
}
