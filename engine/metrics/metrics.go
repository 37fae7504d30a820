// Package metrics exposes the engine's state as Prometheus metrics for
// GET /metrics (docs/design.md §7.2).
//
// Gauges and counters are read from the engine at scrape time (Summary,
// Instances, LastPass, PoolStats) by a custom collector, so a scrape costs
// one walk of the queue and of the pool and nothing happens between scrapes.
// The scheduler-pass histogram is observed as passes happen (ObservePass is
// the engine's Options.OnPass); the probe-latency and boot-time histograms
// are kept by the worker pool (worker.Stats) and exported as they are.
//
// Every label value comes from a fixed set (states, idle behaviours, error
// kinds, cloud operations) or from the configured instance type names, so the
// number of series is bounded.
//
// Usage: the engine needs OnPass at construction, so create the recorder
// first, then attach the engine:
//
//	m := metrics.NewRecorder()
//	eng, err := engine.New(engine.Options{..., OnPass: m.ObservePass})
//	m.Attach(eng)
//	mux.Handle("GET /metrics", m.Handler())
package metrics

import (
	"math"
	"net/http"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"dispatch-tui/engine"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/scheduler"
	"dispatch-tui/engine/version"
	"dispatch-tui/engine/worker"
)

// Namespace prefixes every metric of the dispatcher.
const Namespace = "dispatch_tui"

// PassDurationBuckets are the upper bounds (seconds) of the
// scheduler_pass_duration_seconds histogram: 100µs to 1s.
func PassDurationBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
}

// Metrics records and exposes the dispatcher's metrics. Its methods are
// safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	eng       atomic.Pointer[engine.Engine]
	version   atomic.Pointer[string]
	haStats   atomic.Pointer[func() ha.Stats] // ha.go
	goVersion string

	passDuration prometheus.Histogram
	passStarts   prometheus.Counter
	passCreates  prometheus.Counter
	passUnlocks  prometheus.Counter
	passKills    prometheus.Counter
	preempted    prometheus.Counter
	unhealthy    prometheus.Counter
}

// NewRecorder returns a Metrics with its own registry (the global registry
// is not used) holding the dispatcher's metrics and the Go runtime and
// process collectors. Gauges read from the engine appear once Attach has
// been called.
func NewRecorder() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), goVersion: runtime.Version()}
	v := version.String()
	m.version.Store(&v)

	m.passDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace,
		Name:      "scheduler_pass_duration_seconds",
		Help:      "Wall time of each scheduler pass (reconcile + mapping + issuing starts).",
		Buckets:   PassDurationBuckets(),
	})
	actions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "scheduler_actions_total",
		Help:      "Actions decided by scheduler passes: start (container starts issued), create (instances requested), unlock (locks released), kill (containers killed by reconcile).",
	}, []string{"action"})
	m.passStarts = actions.WithLabelValues("start")
	m.passCreates = actions.WithLabelValues("create")
	m.passUnlocks = actions.WithLabelValues("unlock")
	m.passKills = actions.WithLabelValues("kill")
	m.preempted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "containers_preempted_total",
		Help:      "Running containers requeued because their preemptible instance was taken back (a spot interruption); no attempt is spent.",
	})
	m.unhealthy = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "containers_unhealthy_total",
		Help:      "Containers their runner killed after their health check failed `retries` times in a row (retried under restart_policy = on-failure while attempts remain).",
	})

	m.reg.MustRegister(
		m.passDuration,
		actions,
		m.preempted,
		m.unhealthy,
		newCollector(m),
		newStoreCollector(m),
		newCostCollector(m),
		newHACollector(m),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// ObservePass records one scheduler pass. Pass it as engine.Options.OnPass.
func (m *Metrics) ObservePass(st scheduler.Stats) {
	m.passDuration.Observe(st.Duration.Seconds())
	if st.Starts > 0 {
		m.passStarts.Add(float64(st.Starts))
	}
	if st.Creates > 0 {
		m.passCreates.Add(float64(st.Creates))
	}
	if st.Unlocks > 0 {
		m.passUnlocks.Add(float64(st.Unlocks))
	}
	if st.Kills > 0 {
		m.passKills.Add(float64(st.Kills))
	}
	if st.Preempted > 0 {
		m.preempted.Add(float64(st.Preempted))
	}
	if st.Unhealthy > 0 {
		m.unhealthy.Add(float64(st.Unhealthy))
	}
}

// Attach sets the engine whose state the gauges report (read at every
// scrape). Attaching another engine replaces it.
func (m *Metrics) Attach(e *engine.Engine) { m.eng.Store(e) }

// SetVersion sets the version label of dispatch_tui_build_info (default:
// version.String, the build's).
func (m *Metrics) SetVersion(v string) { m.version.Store(&v) }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry returns the Metrics' registry (to add collectors, or gather in
// tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ---------------------------------------------------------------------------
// scrape-time collector

type collector struct {
	m *Metrics

	// Fixed label sets. Series for every combination are exported (0 when
	// nothing matches), so series do not appear and vanish as things change.
	instanceStates []worker.State
	idleBehaviors  []worker.IdleBehavior
	containerState []queue.State
	opNames        []string
	cloudErrKinds  []string // "" = success

	buildInfo       *prometheus.Desc
	instances       *prometheus.Desc
	unreachable     *prometheus.Desc
	price           *prometheus.Desc
	vcpus           *prometheus.Desc
	ram             *prometheus.Desc
	containers      *prometheus.Desc
	longestWait     *prometheus.Desc
	allocNotStarted *prometheus.Desc
	overQuota       *prometheus.Desc
	atQuota         *prometheus.Desc
	quotaLimit      *prometheus.Desc
	paused          *prometheus.Desc
	lastPass        *prometheus.Desc
	creating        *prometheus.Desc
	cloudOps        *prometheus.Desc
	probes          *prometheus.Desc
	exitNotices     *prometheus.Desc
	probeDuration   *prometheus.Desc
	bootDuration    *prometheus.Desc
	runnerDeploys   *prometheus.Desc
	starts          *prometheus.Desc
	killSignals     *prometheus.Desc
	logsNotStored   *prometheus.Desc
	logsLost        *prometheus.Desc
	logsTruncated   *prometheus.Desc
}

func name(n string) string { return prometheus.BuildFQName(Namespace, "", n) }

func newCollector(m *Metrics) *collector {
	return &collector{
		m:              m,
		instanceStates: []worker.State{worker.StateUnknown, worker.StateBooting, worker.StateIdle, worker.StateRunning, worker.StateShutdown},
		idleBehaviors:  []worker.IdleBehavior{worker.IdleRun, worker.IdleHold, worker.IdleDrain},
		containerState: []queue.State{queue.Queued, queue.Locked, queue.Running, queue.Complete, queue.Cancelled},
		opNames:        []string{"create", "destroy", "list", "set_tags"},
		cloudErrKinds:  []string{"", "quota", "capacity", "rate_limit", "permanent", "other"},
		buildInfo: prometheus.NewDesc(name("build_info"),
			"Always 1; the version label is the dispatcher's version.", []string{"version", "goversion"}, nil),
		instances: prometheus.NewDesc(name("instances"),
			"Instances in the worker pool (creates in flight count as booting), by state, instance type and idle behavior.",
			[]string{"state", "type", "idle_behavior"}, nil),
		unreachable: prometheus.NewDesc(name("instances_unreachable"),
			"Instances not shut down whose probes are failing (unreachable_since is set), by instance type.",
			[]string{"type"}, nil),
		price: prometheus.NewDesc(name("price_per_hour_dollars"),
			"Total hourly price of the instances that are not shut down (creates in flight included).", nil, nil),
		vcpus: prometheus.NewDesc(name("vcpus"),
			"vCPUs: kind=\"total\" is the sum over instances not shut down of their type's vCPUs; kind=\"in_use\" the sum of the vCPUs Running containers asked for.",
			[]string{"kind"}, nil),
		ram: prometheus.NewDesc(name("ram_bytes"),
			"RAM in bytes: kind=\"total\" is the sum over instances not shut down of their type's RAM; kind=\"in_use\" the sum of the RAM Running containers asked for.",
			[]string{"kind"}, nil),
		containers: prometheus.NewDesc(name("containers"),
			"Containers in the queue, by state.", []string{"state"}, nil),
		longestWait: prometheus.NewDesc(name("longest_queue_wait_seconds"),
			"How long the oldest Queued or Locked container has been waiting, at the last scheduler pass.", nil, nil),
		allocNotStarted: prometheus.NewDesc(name("containers_allocated_not_started"),
			"Containers locked to an instance (type) but not started yet, at the last scheduler pass.", nil, nil),
		overQuota: prometheus.NewDesc(name("containers_not_allocated_over_quota"),
			"Containers left unallocated because the instance quota is reached, at the last scheduler pass.", nil, nil),
		atQuota: prometheus.NewDesc(name("at_quota"),
			"1 if the pool is at its instance cap (max_instances or the provider quota estimate), else 0.", nil, nil),
		quotaLimit: prometheus.NewDesc(name("instances_limit"),
			"Effective instance cap: min(max_instances, provider quota estimate); +Inf when unlimited.", nil, nil),
		paused: prometheus.NewDesc(name("scheduler_paused"),
			"1 if the scheduler is paused (no new containers or instances), else 0.", nil, nil),
		lastPass: prometheus.NewDesc(name("scheduler_last_pass_duration_seconds"),
			"Wall time of the last scheduler pass.", nil, nil),
		creating: prometheus.NewDesc(name("instance_creates_in_flight"),
			"Cloud create calls in flight now.", nil, nil),
		cloudOps: prometheus.NewDesc(name("cloud_operations_total"),
			"Cloud API calls completed, by operation and error kind (error=\"none\" for success).",
			[]string{"operation", "error"}, nil),
		probes: prometheus.NewDesc(name("probes_total"),
			"Instance probes completed, by result (ok or error).", []string{"result"}, nil),
		exitNotices: prometheus.NewDesc(name("exit_notices_total"),
			"Container exits runners announced as they happened (runner watch), each recorded without waiting for a probe.", nil, nil),
		probeDuration: prometheus.NewDesc(name("probe_duration_seconds"),
			"Latency of instance probes (connect, boot probe and runner deployment when due, runner list).", nil, nil),
		bootDuration: prometheus.NewDesc(name("instance_boot_seconds"),
			"Time from the create request to the first successful probe, for instances created by this dispatcher.", nil, nil),
		runnerDeploys: prometheus.NewDesc(name("runner_deploys_total"),
			"Runner binaries installed on instances.", nil, nil),
		starts: prometheus.NewDesc(name("container_starts_total"),
			"\"runner start\" calls completed, by result (ok or error).", []string{"result"}, nil),
		killSignals: prometheus.NewDesc(name("container_kill_signals_total"),
			"Signals (TERM, then KILL after kill_grace) sent to containers through their runner.", nil, nil),
		logsNotStored: prometheus.NewDesc(name("logs_store_failures_total"),
			"Containers whose output could not be written to the store (a full disk): counted once per container and error; the runner keeps the output and it is stored again later.", nil, nil),
		logsLost: prometheus.NewDesc(name("logs_lost_total"),
			"Containers whose output is lost: their instance was destroyed unreachable, or before the output could be stored within timeout_shutdown.", nil, nil),
		logsTruncated: prometheus.NewDesc(name("logs_truncated_total"),
			"Containers whose stored output was cut to [containers] max_output, its start dropped (their logs_truncated field says how much).", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.buildInfo, c.instances, c.unreachable, c.price, c.vcpus, c.ram, c.containers, c.longestWait,
		c.allocNotStarted, c.overQuota, c.atQuota, c.quotaLimit, c.paused, c.lastPass,
		c.creating, c.cloudOps, c.probes, c.exitNotices, c.probeDuration, c.bootDuration, c.runnerDeploys,
		c.starts, c.killSignals, c.logsNotStored, c.logsLost, c.logsTruncated,
	} {
		ch <- d
	}
}

type instanceKey struct {
	state    worker.State
	typ      string
	behavior worker.IdleBehavior
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(c.buildInfo, 1, *c.m.version.Load(), c.m.goVersion)

	e := c.m.eng.Load()
	if e == nil {
		return
	}
	sum := e.Summary()
	last := e.LastPass()
	ps := e.PoolStats()
	types := e.Config().InstanceTypes

	// Instances, price and capacity.
	counts := make(map[instanceKey]int, len(c.instanceStates)*len(c.idleBehaviors)*len(types))
	for _, st := range c.instanceStates {
		for _, t := range types {
			for _, b := range c.idleBehaviors {
				counts[instanceKey{st, t.Name, b}] = 0
			}
		}
	}
	typeIdx := make(map[string]int, len(types))
	for i, t := range types {
		typeIdx[t.Name] = i
	}
	unreachable := make(map[string]int, len(types))
	for _, t := range types {
		unreachable[t.Name] = 0
	}
	var price float64
	// Totals add up as floats: what they are exported as, and a sum of
	// sizes that cannot wrap around.
	var vcpuTotal, ramTotal float64
	for _, v := range e.Instances() {
		counts[instanceKey{v.State, v.Type, v.IdleBehavior}]++
		if v.State == worker.StateShutdown || v.State == worker.StateRefused || v.State == worker.StateForeign {
			continue // display rows and dying instances add no capacity
		}
		if !v.UnreachableSince.IsZero() {
			unreachable[v.Type]++
		}
		price += v.Price
		if i, ok := typeIdx[v.Type]; ok {
			vcpuTotal += float64(types[i].VCPUs)
			ramTotal += float64(types[i].RAM)
		}
	}
	for k, n := range counts {
		gauge(c.instances, float64(n), string(k.state), k.typ, string(k.behavior))
	}
	for typ, n := range unreachable {
		gauge(c.unreachable, float64(n), typ)
	}
	gauge(c.price, price)

	var vcpuUsed, ramUsed float64
	running, _ := e.Containers(engine.ListOptions{States: []queue.State{queue.Running}})
	for i := range running {
		vcpuUsed += float64(running[i].RuntimeConstraints.VCPUs)
		ramUsed += float64(running[i].RuntimeConstraints.RAM)
	}
	gauge(c.vcpus, vcpuTotal, "total")
	gauge(c.vcpus, vcpuUsed, "in_use")
	gauge(c.ram, ramTotal, "total")
	gauge(c.ram, ramUsed, "in_use")

	// Queue and scheduler.
	for _, st := range c.containerState {
		gauge(c.containers, float64(sum.Containers[st]), string(st))
	}
	for st, n := range sum.Containers {
		if !slices.Contains(c.containerState, st) {
			gauge(c.containers, float64(n), string(st))
		}
	}
	gauge(c.longestWait, sum.LongestWait.Seconds())
	gauge(c.allocNotStarted, float64(last.AllocatedNotStart))
	gauge(c.overQuota, float64(last.OverQuota))
	gauge(c.atQuota, boolValue(sum.AtQuota))
	limit := math.Inf(1)
	if sum.QuotaLimit < math.MaxInt {
		limit = float64(sum.QuotaLimit)
	}
	gauge(c.quotaLimit, limit)
	gauge(c.paused, boolValue(sum.Paused))
	gauge(c.lastPass, last.Duration.Seconds())

	// Pool counters.
	gauge(c.creating, float64(ps.Creating))
	for _, op := range c.opNames {
		for _, kind := range c.cloudErrKinds {
			counter(c.cloudOps, float64(ps.CloudOps[op][kind]), op, errLabel(kind))
		}
	}
	for op, kinds := range ps.CloudOps {
		for kind, n := range kinds {
			if !slices.Contains(c.opNames, op) || !slices.Contains(c.cloudErrKinds, kind) {
				counter(c.cloudOps, float64(n), op, errLabel(kind))
			}
		}
	}
	counter(c.probes, float64(ps.Probes-ps.ProbeFailures), "ok")
	counter(c.probes, float64(ps.ProbeFailures), "error")
	counter(c.exitNotices, float64(ps.ExitNotices))
	ch <- constHistogram(c.probeDuration, ps.ProbeLatency)
	ch <- constHistogram(c.bootDuration, ps.BootTime)
	counter(c.runnerDeploys, float64(ps.RunnerDeploys))
	counter(c.starts, float64(ps.Starts-ps.StartFailures), "ok")
	counter(c.starts, float64(ps.StartFailures), "error")
	counter(c.killSignals, float64(ps.Kills))

	// Output not stored.
	ls := e.LogsStats()
	counter(c.logsNotStored, float64(ls.StoreFailures))
	counter(c.logsLost, float64(ls.Lost))
	counter(c.logsTruncated, float64(ls.Truncated))
}

// constHistogram converts a pool histogram (per-bucket counts in durations)
// to a Prometheus one (cumulative counts, bounds in seconds).
func constHistogram(d *prometheus.Desc, h worker.DurationHistogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[b.Seconds()] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets)
}

func errLabel(kind string) string {
	if kind == "" {
		return "none"
	}
	return kind
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
