// Snapshots of the pool for readers: instance views and stats.

package worker

import (
	"slices"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// InstanceView is a copy of one instance's state, safe to keep: what the
// engine's edge shows of it (view.Instance, docs/design.md §3) and the
// pool's own bookkeeping, which stays behind the edge.
//
// In the pool's terms: ProbeFailing means the scheduler starts nothing
// there until a probe succeeds. Once a Preempted instance's destroy is
// accepted, ContainersLost says so and its containers are requeued
// without spending an attempt (preempt.go). UnreachableSince is set at
// the latest when the first failed probe's call deadline passes. A
// booting instance is not expected to answer until timeout_booting, so
// its probe errors stay in ProbeError and reach LastError only when the
// boot fails. CreatedAt is kept in the instance's tags
// (cloud.TagCreatedAt), so that it survives a restart of the dispatcher.
type InstanceView struct {
	view.Instance
	// AskedAt is when this pool asked the cloud for the instance (zero for
	// one found in a listing); BootedAt is when its first probe after
	// booting in this pool succeeded. The cost ledger dates the end of a
	// boot by them rather than by the pass that first sees it.
	AskedAt  time.Time `json:"-"`
	BootedAt time.Time `json:"-"`
	// ContainersLost says why the containers recorded on this instance are
	// to be requeued now: its destroy was accepted, an operator killed it,
	// or it was unreachable past timeout_unreachable. While it is "", they
	// may still be running there, even on an instance in shutdown, and
	// their records stay Running (fence.go).
	ContainersLost string `json:"-"`
	// Reported is the runner's last "runner list" (running and exited
	// containers), taken at ListedAt. Nil until the first successful list.
	Reported []runner.Status `json:"-"`
	ListedAt time.Time       `json:"-"`
}

// Stats are the pool's counters, for metrics.
type Stats struct {
	// CloudOps counts cloud calls: op (create, destroy, list, set_tags) ->
	// error kind ("" ok, quota, capacity, rate_limit, other) -> count.
	CloudOps      map[string]map[string]int
	Probes        int           // probes completed
	ProbeFailures int           // probes that failed
	ProbeTime     time.Duration // total latency of completed probes
	ProbeMaxTime  time.Duration // longest probe
	RunnerDeploys int           // runner binaries installed
	Starts        int           // "runner start" calls completed
	StartFailures int           // of which failed
	Kills         int           // "runner kill" calls issued
	ExitNotices   int           // exits runners announced (exitnotice.go)
	Watching      int           // instances whose runner watch is ready now
	StatusReads   int           // "list <id>" batches read after notices
	Creating      int           // create calls in flight now
	QuotaLimit    int           // effective instance cap now (Quota)
	AtQuota       bool
	PausedUntil   time.Time // cloud calls paused by a rate limit until then
	// ProbeLatency holds the latency of every completed probe (the
	// observations summed in ProbeTime).
	ProbeLatency DurationHistogram
	// BootTime holds, for each instance this pool created, the time from
	// the create request to its first successful probe (ready).
	BootTime DurationHistogram
}

// DurationHistogram counts observations in fixed buckets (for metrics).
type DurationHistogram struct {
	// Bounds are the buckets' inclusive upper bounds, ascending. The slice
	// is fixed when the pool is created and shared by every copy: do not
	// modify it.
	Bounds []time.Duration
	// Counts[i] is the number of observations in (Bounds[i-1], Bounds[i]];
	// the last element (len(Bounds)) counts those above every bound.
	Counts []uint64
	Count  uint64        // observations
	Sum    time.Duration // their total
}

func newDurationHistogram(bounds ...time.Duration) DurationHistogram {
	return DurationHistogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

func (h *DurationHistogram) observe(d time.Duration) {
	i, _ := slices.BinarySearch(h.Bounds, d)
	h.Counts[i]++
	h.Count++
	h.Sum += d
}

// clone returns a copy that does not share Counts.
func (h DurationHistogram) clone() DurationHistogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// countOpLocked records a cloud call in Stats.
func (p *Pool) countOpLocked(op string, err error) {
	m := p.stats.CloudOps[op]
	if m == nil {
		m = make(map[string]int, 2)
		p.stats.CloudOps[op] = m
	}
	m[cloud.ErrorKind(err)]++
}

// view returns a deep copy of w's view.
func (w *instance) view() InstanceView {
	v := w.v
	v.Containers = slices.Clone(w.v.Containers)
	if v.Containers == nil {
		v.Containers = []string{}
	}
	if w.v.Reported != nil {
		v.Reported = append([]runner.Status{}, w.v.Reported...)
	}
	return v
}

// Instances appends a snapshot of every instance to buf[:0]: by ID, then
// creates in flight (ID ""). Containers and Reported are copies.
func (p *Pool) Instances(buf []InstanceView) []InstanceView {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.instancesLocked(buf)
}

func (p *Pool) instancesLocked(buf []InstanceView) []InstanceView {
	buf = buf[:0]
	nc, nr := 0, 0
	for _, w := range p.list {
		nc += len(w.v.Containers)
		nr += len(w.v.Reported)
	}
	cs := make([]string, nc)
	rs := make([]runner.Status, nr)
	for _, w := range p.list {
		v := w.v
		n := copy(cs, w.v.Containers)
		v.Containers = cs[:n:n]
		cs = cs[n:]
		if w.v.Reported != nil {
			n = copy(rs, w.v.Reported)
			v.Reported = rs[:n:n]
			rs = rs[n:]
		}
		buf = append(buf, v)
	}
	for _, pc := range p.pending {
		v := pc.view
		v.Containers = cs[:0:0]
		buf = append(buf, v)
	}
	return buf
}

// Instance returns a snapshot of one instance.
func (p *Pool) Instance(id cloud.InstanceID) (InstanceView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.byID[id]
	if w == nil {
		return InstanceView{}, false
	}
	return w.view(), true
}

// Listed reports whether a cloud listing has completed since the pool
// started (scheduler.Pool).
func (p *Pool) Listed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced
}

// Ready reports whether the first listing is done and every instance it
// found has been probed at least once (successfully or not).
func (p *Pool) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready {
		return true
	}
	if !p.synced {
		return false
	}
	for _, w := range p.list {
		if w.initial && !w.probed && w.v.State != StateShutdown {
			return false
		}
	}
	p.ready = true
	return true
}

// Stats returns a copy of the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.CloudOps = make(map[string]map[string]int, len(p.stats.CloudOps))
	for op, m := range p.stats.CloudOps {
		s.CloudOps[op] = make(map[string]int, len(m))
		for k, n := range m {
			s.CloudOps[op][k] = n
		}
	}
	s.ProbeLatency = p.stats.ProbeLatency.clone()
	s.BootTime = p.stats.BootTime.clone()
	now := p.clk.Now()
	s.QuotaLimit = p.limitLocked(now)
	s.AtQuota = p.atCapLocked(now)
	s.PausedUntil = p.pausedUntil
	for _, w := range p.list {
		if w.watching {
			s.Watching++
		}
	}
	return s
}

// or returns s, or d when s is empty.
func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
