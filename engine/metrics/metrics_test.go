package metrics

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/scheduler"
	"dispatch-tui/engine/worker"
)

const gib = enginetest.GiB

// testEnv is an Engine on the fake driver with a fake clock, with a
// Metrics recorder wired as the engine's OnPass hook.
type testEnv struct {
	*enginetest.Env
	t     *testing.T
	clk   *clock.Fake
	cloud *fake.Driver
	eng   *engine.Engine
	m     *Metrics
}

func newEnv(t *testing.T, ct fake.Options) *testEnv {
	t.Helper()
	cfg := enginetest.Config(t)
	cfg.Dispatcher.MaxInstances = 20
	cfg.Dispatcher.MaxContainersPerInstance = 1
	cfg.Cloud.TimeoutIdle = 5 * time.Minute
	m := NewRecorder()
	env := enginetest.New(t, cfg, ct, engine.Options{OnPass: m.ObservePass})
	m.Attach(env.Engine)
	return &testEnv{Env: env, t: t, clk: env.Clock, cloud: env.Cloud, eng: env.Engine, m: m}
}

func (env *testEnv) submit(n int) []string {
	env.t.Helper()
	var ids []string
	for range n {
		c, err := env.eng.Submit(queue.Spec{
			Command:            []string{"run-forever"},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2},
		}, "test")
		if err != nil {
			env.t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	return ids
}

func (env *testEnv) count(st queue.State) int {
	_, n := env.eng.Containers(engine.ListOptions{States: []queue.State{st}})
	return n
}

// scrape GETs the handler and returns the exposition text and its families.
func scrape(t *testing.T, m *Metrics) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	text := rec.Body.String()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, text)
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
	return text, fams
}

// find returns the metric of family name whose labels include want.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	m := find(fams, name, want)
	if m == nil {
		t.Fatalf("no series %s%v", name, want)
	}
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s%v: unexpected metric type", name, want)
	return 0
}

func expect(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	if got := value(t, fams, name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name string) *dto.Histogram {
	t.Helper()
	m := find(fams, name, nil)
	if m == nil || m.Histogram == nil {
		t.Fatalf("no histogram %s", name)
	}
	return m.Histogram
}

// promtoolCheck runs "promtool check metrics" on the exposition text when
// promtool is installed (Debian package "prometheus"); without it the check
// is skipped, except under CI=true where it fails. Call it in a subtest: it
// may skip.
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found (install Debian package prometheus): %v", err)
		}
		t.Skip("promtool not installed (Debian package prometheus); skipping promtool check metrics")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}

func TestBeforeAttach(t *testing.T) {
	m := NewRecorder()
	_, fams := scrape(t, m)
	expect(t, fams, 1, "dispatch_tui_build_info")
	expect(t, fams, 0, "dispatch_tui_scheduler_pass_duration_seconds")
	if fams["dispatch_tui_instances"] != nil {
		t.Error("instances gauge exported without an engine")
	}
	m.ObservePass(scheduler.Stats{Duration: 300 * time.Microsecond, Starts: 2})
	_, fams = scrape(t, m)
	expect(t, fams, 1, "dispatch_tui_scheduler_pass_duration_seconds")
	expect(t, fams, 2, "dispatch_tui_scheduler_actions_total", "action", "start")
	expect(t, fams, 0, "dispatch_tui_containers_preempted_total")
	expect(t, fams, 0, "dispatch_tui_containers_unhealthy_total")
	m.ObservePass(scheduler.Stats{Preempted: 3, Unhealthy: 1})
	m.ObservePass(scheduler.Stats{Unhealthy: 2})
	_, fams = scrape(t, m)
	expect(t, fams, 3, "dispatch_tui_containers_preempted_total")
	expect(t, fams, 3, "dispatch_tui_containers_unhealthy_total")
}

func TestMetrics(t *testing.T) {
	env := newEnv(t, fake.Options{Seed: 1, BootDelay: 3 * time.Second})
	m := env.m

	ids := env.submit(3)
	env.Until("3 containers running", 60, func() bool { return env.count(queue.Running) == 3 })
	env.Step(2) // a probe after the starts

	text, fams := scrape(t, m)
	expect(t, fams, 3, "dispatch_tui_instances", "state", "running", "type", "small", "idle_behavior", "run")
	expect(t, fams, 0, "dispatch_tui_instances", "state", "idle", "type", "small", "idle_behavior", "run")
	expect(t, fams, 0, "dispatch_tui_instances", "state", "booting", "type", "large", "idle_behavior", "hold")
	expect(t, fams, 3, "dispatch_tui_containers", "state", "Running")
	expect(t, fams, 0, "dispatch_tui_containers", "state", "Queued")
	expect(t, fams, 3, "dispatch_tui_cloud_operations_total", "operation", "create", "error", "none")
	expect(t, fams, 0, "dispatch_tui_cloud_operations_total", "operation", "create", "error", "quota")
	if v := value(t, fams, "dispatch_tui_cloud_operations_total", "operation", "list", "error", "none"); v < 1 {
		t.Errorf("list operations = %v, want >= 1", v)
	}
	expect(t, fams, 3.0, "dispatch_tui_price_per_hour_dollars")
	expect(t, fams, 3, "dispatch_tui_vcpus", "kind", "total")
	expect(t, fams, 3, "dispatch_tui_vcpus", "kind", "in_use")
	expect(t, fams, float64(6*gib), "dispatch_tui_ram_bytes", "kind", "total")
	expect(t, fams, float64(3*gib/2), "dispatch_tui_ram_bytes", "kind", "in_use")
	expect(t, fams, 0, "dispatch_tui_at_quota")
	expect(t, fams, 20, "dispatch_tui_instances_limit")
	expect(t, fams, 0, "dispatch_tui_scheduler_paused")
	expect(t, fams, 0, "dispatch_tui_containers_allocated_not_started")
	expect(t, fams, 0, "dispatch_tui_containers_not_allocated_over_quota")
	expect(t, fams, 0, "dispatch_tui_longest_queue_wait_seconds")
	expect(t, fams, 3, "dispatch_tui_container_starts_total", "result", "ok")
	expect(t, fams, 3, "dispatch_tui_scheduler_actions_total", "action", "start")
	expect(t, fams, 3, "dispatch_tui_scheduler_actions_total", "action", "create")
	// A pass per step, but for a step whose probes had not answered yet,
	// which changes nothing and skips its pass (below).
	if n := value(t, fams, "dispatch_tui_scheduler_pass_duration_seconds"); n < 1 || n > float64(env.Steps) {
		t.Errorf("%v passes counted in %d steps, want 1 to %d", n, env.Steps, env.Steps)
	}
	if v := value(t, fams, "dispatch_tui_probes_total", "result", "ok"); v < 3 {
		t.Errorf("probes ok = %v, want >= 3", v)
	}
	// Booting instances' probes fail until BootDelay has passed.
	if v := value(t, fams, "dispatch_tui_probes_total", "result", "error"); v < 1 {
		t.Errorf("probes error = %v, want >= 1", v)
	}

	// Every label value is from a fixed set or a configured type name.
	for _, mt := range fams["dispatch_tui_instances"].Metric {
		for _, l := range mt.Label {
			var ok bool
			switch l.GetName() {
			case "state":
				ok = slices.Contains([]string{"unknown", "booting", "idle", "running", "shutdown"}, l.GetValue())
			case "type":
				ok = slices.Contains([]string{"small", "large"}, l.GetValue())
			case "idle_behavior":
				ok = slices.Contains([]string{"run", "hold", "drain"}, l.GetValue())
			}
			if !ok {
				t.Errorf("dispatch_tui_instances: unexpected label %s=%q", l.GetName(), l.GetValue())
			}
		}
	}
	if n := len(fams["dispatch_tui_instances"].Metric); n != 5*2*3 {
		t.Errorf("dispatch_tui_instances has %d series, want %d", n, 5*2*3)
	}

	// Boot time: create request to ready, at least BootDelay each.
	boot := histogram(t, fams, "dispatch_tui_instance_boot_seconds")
	if boot.GetSampleCount() != 3 || boot.GetSampleSum() < 9 {
		t.Errorf("instance_boot_seconds count=%d sum=%v, want 3 and >= 9s", boot.GetSampleCount(), boot.GetSampleSum())
	}
	for _, b := range boot.Bucket {
		if b.GetUpperBound() < 3 && b.GetCumulativeCount() != 0 {
			t.Errorf("instance_boot_seconds bucket le=%v = %d, want 0 (boot delay 3s)", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
	probe := histogram(t, fams, "dispatch_tui_probe_duration_seconds")
	if probe.GetSampleCount() == 0 {
		t.Error("probe_duration_seconds has no observations")
	}
	if got, want := float64(probe.GetSampleCount()),
		value(t, fams, "dispatch_tui_probes_total", "result", "ok")+value(t, fams, "dispatch_tui_probes_total", "result", "error"); got != want {
		t.Errorf("probe_duration_seconds count %v != probes_total %v", got, want)
	}
	pass := histogram(t, fams, "dispatch_tui_scheduler_pass_duration_seconds")
	if ub := pass.Bucket[0].GetUpperBound(); ub != 0.0001 {
		t.Errorf("first pass bucket %v, want 0.0001", ub)
	}
	var finite []float64
	for _, b := range pass.Bucket {
		if !math.IsInf(b.GetUpperBound(), 1) {
			finite = append(finite, b.GetUpperBound())
		}
	}
	if !slices.Equal(finite, PassDurationBuckets()) {
		t.Errorf("pass buckets %v, want %v", finite, PassDurationBuckets())
	}
	t.Run("promtool", func(t *testing.T) { promtoolCheck(t, text) })

	// The pass histogram counts the passes that ran: a step that would
	// change nothing skips its pass (docs/design.md §2), and one after a
	// change runs it. Steps are taken until one runs no pass (the probes'
	// last answers settling), then three more must run none.
	passes := func() float64 {
		_, f := scrape(t, m)
		return value(t, f, "dispatch_tui_scheduler_pass_duration_seconds")
	}
	for i := 0; ; i++ {
		n := passes()
		env.Step(1)
		if passes() == n {
			break
		}
		if i == 20 {
			t.Fatal("20 steps in a row each ran a pass: the queue never settled")
		}
	}
	settled := passes()
	env.Step(3)
	if got := passes(); got != settled {
		t.Errorf("3 steps on a settled queue ran %v passes, want none", got-settled)
	}
	if err := env.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	env.Step(1)
	if err := env.eng.Resume("test", ""); err != nil {
		t.Fatal(err)
	}
	env.Step(1)
	if got := passes(); got != settled+2 {
		t.Errorf("a pause and a resume, a step after each: %v passes, want 2", got-settled)
	}

	// Hold one instance, pause, resume.
	inst := env.eng.Instances()[0].ID
	if _, err := env.eng.HoldInstance(string(inst), "test", ""); err != nil {
		t.Fatal(err)
	}
	if err := env.eng.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	_, fams = scrape(t, m)
	expect(t, fams, 2, "dispatch_tui_instances", "state", "running", "type", "small", "idle_behavior", "run")
	expect(t, fams, 1, "dispatch_tui_instances", "state", "running", "type", "small", "idle_behavior", "hold")
	expect(t, fams, 1, "dispatch_tui_scheduler_paused")
	if err := env.eng.Resume("test", ""); err != nil {
		t.Fatal(err)
	}

	// Quota: the cloud refuses a 4th instance.
	env.cloud.Configure(func(f *fake.Faults) { f.Quota = 3 })
	env.submit(2)
	env.Until("at quota", 30, func() bool { return env.eng.Summary().AtQuota })
	env.Step(1)
	text, fams = scrape(t, m)
	expect(t, fams, 1, "dispatch_tui_at_quota")
	expect(t, fams, 3, "dispatch_tui_instances_limit")
	if v := value(t, fams, "dispatch_tui_cloud_operations_total", "operation", "create", "error", "quota"); v < 1 {
		t.Errorf("create quota errors = %v, want >= 1", v)
	}
	expect(t, fams, 3, "dispatch_tui_cloud_operations_total", "operation", "create", "error", "none")
	if v := value(t, fams, "dispatch_tui_containers", "state", "Queued") +
		value(t, fams, "dispatch_tui_containers", "state", "Locked"); v != 2 {
		t.Errorf("Queued + Locked containers = %v, want 2", v)
	}
	expect(t, fams, 3, "dispatch_tui_containers", "state", "Running")
	if v := value(t, fams, "dispatch_tui_longest_queue_wait_seconds"); v <= 0 {
		t.Errorf("longest_queue_wait_seconds = %v, want > 0", v)
	}
	if v := value(t, fams, "dispatch_tui_containers_not_allocated_over_quota") +
		value(t, fams, "dispatch_tui_containers_allocated_not_started"); v < 1 {
		t.Errorf("waiting containers at quota: over_quota + allocated_not_started = %v, want >= 1", v)
	}
	t.Run("promtool", func(t *testing.T) { promtoolCheck(t, text) })

	// Kill a container: its instance goes idle (after a probe) and no
	// container counts as using resources any more.
	if _, err := env.eng.KillContainer(ids[0], "test", "done"); err != nil {
		t.Fatal(err)
	}
	env.Until("container cancelled", 60, func() bool { return env.count(queue.Cancelled) == 1 })
	_, fams = scrape(t, m)
	expect(t, fams, 1, "dispatch_tui_containers", "state", "Cancelled")
	// Every output stored.
	expect(t, fams, 0, "dispatch_tui_logs_store_failures_total")
	expect(t, fams, 0, "dispatch_tui_logs_lost_total")
	expect(t, fams, 0, "dispatch_tui_logs_truncated_total")
	if v := value(t, fams, "dispatch_tui_container_kill_signals_total"); v < 1 {
		t.Errorf("kill signals = %v, want >= 1", v)
	}
}

// An instance whose probes fail counts in instances_unreachable until it
// answers again; the series exist (at 0) for every type.
func TestUnreachableGauge(t *testing.T) {
	env := newEnv(t, fake.Options{Seed: 1})
	env.submit(1)
	env.Until("running", 60, func() bool { return env.count(queue.Running) == 1 })
	_, fams := scrape(t, env.m)
	expect(t, fams, 0, "dispatch_tui_instances_unreachable", "type", "small")
	expect(t, fams, 0, "dispatch_tui_instances_unreachable", "type", "large")

	inst := env.eng.Instances()[0].ID
	env.cloud.Break(cloud.InstanceID(inst))
	env.Until("unreachable", 30, func() bool {
		v, _ := env.eng.Instance(string(inst))
		return !v.UnreachableSince.IsZero()
	})
	text, fams := scrape(t, env.m)
	expect(t, fams, 1, "dispatch_tui_instances_unreachable", "type", "small")
	t.Run("promtool", func(t *testing.T) { promtoolCheck(t, text) })

	env.cloud.Unbreak(cloud.InstanceID(inst))
	env.Until("reachable", 30, func() bool {
		v, _ := env.eng.Instance(string(inst))
		return v.UnreachableSince.IsZero()
	})
	_, fams = scrape(t, env.m)
	expect(t, fams, 0, "dispatch_tui_instances_unreachable", "type", "small")
}

// TestConcurrentScrapes scrapes while the engine steps (run with -race).
func TestConcurrentScrapes(t *testing.T) {
	env := newEnv(t, fake.Options{Seed: 2})
	env.submit(5)
	srv := httptest.NewServer(env.m.Handler())
	defer srv.Close()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	env.Step(20)
	close(done)
	wg.Wait()
	_, fams := scrape(t, env.m)
	expect(t, fams, 5, "dispatch_tui_containers", "state", "Running")
}

// TestConstHistogram checks the conversion of the pool's per-bucket counts
// to cumulative Prometheus buckets.
func TestConstHistogram(t *testing.T) {
	m := NewRecorder()
	c := newCollector(m)
	hist := constHistogram(c.probeDuration, worker.DurationHistogram{
		Bounds: []time.Duration{time.Second, 2 * time.Second},
		Counts: []uint64{1, 2, 3}, // 3 above 2s
		Count:  6,
		Sum:    10 * time.Second,
	})
	var out dto.Metric
	if err := hist.Write(&out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range out.Histogram.Bucket {
		got = append(got, model.SampleValue(b.GetUpperBound()).String()+"="+model.SampleValue(float64(b.GetCumulativeCount())).String())
	}
	sort.Strings(got)
	if want := []string{"1=1", "2=3"}; !slices.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
	if out.Histogram.GetSampleCount() != 6 || math.Abs(out.Histogram.GetSampleSum()-10) > 1e-9 {
		t.Errorf("count %d sum %v", out.Histogram.GetSampleCount(), out.Histogram.GetSampleSum())
	}
}

// BenchmarkObservePass: the per-pass cost metrics add to the scheduler
// (docs/design.md §9 counts it in the pass budget).
func BenchmarkObservePass(b *testing.B) {
	m := NewRecorder()
	st := scheduler.Stats{Duration: 2 * time.Millisecond, Starts: 3, Creates: 1}
	b.ReportAllocs()
	for b.Loop() {
		m.ObservePass(st)
	}
}

// An output over [containers] max_output (4 MiB by default) is stored cut,
// and logs_truncated_total counts its container once.
func TestLogsTruncatedCounter(t *testing.T) {
	env := newEnv(t, fake.Options{Seed: 3})
	c, err := env.eng.Submit(queue.Spec{
		Command:            fake.CmdOutput(0, 0, 5<<20),
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2},
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	env.Until("complete with its output stored", 300, func() bool {
		got, _ := env.eng.Container(c.ID)
		_, err := env.eng.Logs(t.Context(), c.ID, 1)
		return got.State == queue.Complete && err == nil
	})
	text, fams := scrape(t, env.m)
	expect(t, fams, 1, "dispatch_tui_logs_truncated_total")
	expect(t, fams, 0, "dispatch_tui_logs_store_failures_total")
	t.Run("promtool", func(t *testing.T) { promtoolCheck(t, text) })
}
