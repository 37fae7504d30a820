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

	"dispatch-tui/cloud/cloudtest"
	"dispatch-tui/engine/queue"
)

var (
	memoryRun     = flag.Bool("memory", false, "run TestMemory100k (make bench-memory)")
	memoryProfile = flag.String("memory.heapprofile", "", "TestMemory100k: write a heap profile at the measurement to this file")
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
// containers queued and 1,000 instances running (cloudtest driver), the
// shape of docs/design.md §9's memory target. It reports, it does not assert a
// timing; the RSS bound is checked.
func TestMemory100k(t *testing.T) {
	if !*memoryRun {
		t.Skip("run with -memory (make bench-memory)")
	}
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 1000
	cfg.Cloud.MaxConcurrentCreates = 200
	cfg.Cloud.MaxCloudOpsPerSecond = 1000
	cfg.Cloud.MaxProbesPerSecond = 2000
	h := newHarness(t, cfg, cloudtest.Options{Quota: 1000})
	specs := make([]queue.Spec, 100000)
	for i := range specs {
		specs[i] = queue.Spec{Name: "mem-" + strconv.Itoa(i), Command: []string{"run-forever", strconv.Itoa(i)},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
	}
	for i := 0; i < len(specs); i += 10000 {
		if _, err := h.eng.queue.SubmitBatch(specs[i:i+10000], "memory"); err != nil {
			t.Fatal(err)
		}
	}
	h.until("1,000 instances running", 600, func() bool { return h.eng.Summary().Instances["running"] >= 1000 })
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
	t.Logf("100,000 containers (%v), %d instances: RSS %d MiB (anonymous %d MiB, file-backed incl. the bbolt mmap %d MiB), Go heap in use %d MiB, last pass %s",
		st.ByState, len(h.eng.Instances()), rss>>20, anon>>20, file>>20, ms.HeapInuse>>20, st.Duration.Round(time.Microsecond))
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
	if rss > 200<<20 {
		t.Fatalf("RSS %d MiB > 200 MiB", rss>>20)
	}
}
