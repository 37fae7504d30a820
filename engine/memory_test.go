package engine

import (
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
)

var (
	memoryRun     = flag.Bool("memory", false, "run TestMemory100k (make bench-memory) and TestMemory1M (make bench-million)")
	memoryProfile = flag.String("memory.heapprofile", "", "TestMemory100k, TestMemory1M: write a heap profile at the measurement to this file")
)

// procStatus reads a memory line of /proc/self/status in bytes (VmRSS,
// RssAnon, RssFile).
func procStatus(t *testing.T, key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key+":" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no %s", key)
	return 0
}

// TestMemory100k measures the engine's resident memory with 100,000
// containers queued and 1,000 instances running (fake driver), the
// shape of docs/design.md §9's memory target. It reports, it does not assert a
// timing; the RSS bound is checked.
func TestMemory100k(t *testing.T) { measureMemory(t, 100000, 1000, 200<<20) }

// TestMemory10k is TestMemory100k at 10,000 containers, for the growth
// 10k → 100k → 1M recorded in BENCHMARKS.md.
func TestMemory10k(t *testing.T) { measureMemory(t, 10000, 1000, 200<<20) }

// TestMemory1M is TestMemory100k at a million containers and 10,000
// instances (docs/design.md §9.1): RSS at most 1.5 GiB.
func TestMemory1M(t *testing.T) { measureMemory(t, 1000000, 10000, 1536<<20) }

// measureMemory queues n containers, brings up instances instances (one
// container running on each) and checks the RSS it settles at.
func measureMemory(t *testing.T, n, instances int, bound int64) {
	if !*memoryRun {
		t.Skip("run with -memory (make bench-memory, make bench-million)")
	}
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = instances
	cfg.Cloud.MaxConcurrentCreates = max(200, instances/5)
	cfg.Cloud.MaxCloudOpsPerSecond = float64(max(1000, instances))
	cfg.Cloud.MaxProbesPerSecond = float64(max(2000, 2*instances))
	h := newHarness(t, cfg, fake.Options{Quota: instances})
	specs := make([]queue.Spec, 10000)
	for i := 0; i < n; i += len(specs) {
		for j := range specs {
			specs[j] = queue.Spec{Name: "mem-" + strconv.Itoa(i+j), Command: []string{"run-forever", strconv.Itoa(i + j)},
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
		}
		if _, err := h.eng.queue.SubmitBatch(specs, "memory"); err != nil {
			t.Fatal(err)
		}
	}
	h.until(strconv.Itoa(instances)+" instances running", 600, func() bool { return h.eng.Summary().Instances["running"] >= instances })
	h.step(10)
	// What a long-running daemon settles at: garbage from the submits
	// collected and returned to the OS (the runtime's scavenger does this
	// by itself over minutes).
	debug.FreeOSMemory()
	rss := procStatus(t, "VmRSS")
	anon, file := procStatus(t, "RssAnon"), procStatus(t, "RssFile")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := h.eng.Step()
	t.Logf("%d containers (%v), %d instances: RSS %d MiB (anonymous %d MiB, file-backed incl. the bbolt mmap %d MiB), Go heap in use %d MiB, last pass %s",
		n, st.ByState, len(h.eng.Instances()), rss>>20, anon>>20, file>>20, ms.HeapInuse>>20, st.Duration.Round(time.Microsecond))
	if *memoryProfile != "" {
		f, err := os.Create(*memoryProfile)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if rss > bound {
		t.Fatalf("RSS %d MiB > %d MiB", rss>>20, bound>>20)
	}
}
