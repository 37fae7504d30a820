// Package cost is the cost ledger (docs/design.md §6.1): for every instance
// the spans of its life (booting, idle, running with which containers,
// draining or shutting down) and its price over them, from which it tells
// what each container cost, where the bill went and what the day will
// cost. The engine feeds it once a pass (Observe); it is kept in the
// queue's store and written in the queue's flushes.
package cost

// The ledger's records and Observe, which extends them from the pool's view.

import (
	"slices"
	"strings"
	"sync"
	"time"

	"dispatch-tui/engine/view"
)

// Kind is what an instance was doing over a span: what the bill is split by.
type Kind = view.CostKind

// The kinds. Drain covers both an instance set to drain that has nothing
// left to run and one being shut down: either way it is being paid for on
// its way out.
const (
	Boot    Kind = "boot"
	Idle    Kind = "idle"
	Running Kind = "running"
	Drain   Kind = "drain"
)

// Kinds lists every kind, in the order reports show them.
var Kinds = []Kind{Running, Idle, Boot, Drain}

// Sample is one instance as the engine sees it at a pass.
type Sample struct {
	ID    string
	Type  string
	Price float64 // dollars an hour now
	// Kind is "" while the engine cannot tell (an instance not yet probed
	// since a restart): the ledger keeps the span it has.
	Kind Kind
	// Containers on the instance, sorted; only with Kind Running.
	Containers []string
	// Asked is when this dispatcher asked the cloud for the instance
	// (zero: found in a listing); Booted is when it left booting (zero:
	// not seen booting). Boot is dated by them, not by the pass that
	// first sees the instance, so a boot that ends between two passes is
	// still billed as boot.
	Asked, Booted time.Time
}

// ContainerInfo is what the ledger keeps of a container: its labels (to
// sum by) and its requested share of the instance type it runs on.
type ContainerInfo struct {
	Labels map[string]string `json:"labels,omitempty"`
	// Share is the larger of its vCPU share and its RAM share of its
	// instance type (docs/design.md §6.1), in (0, 1].
	Share float64 `json:"share"`
}

// span is a stretch of an instance's life with one kind and one set of
// containers; it ends where the next begins, or at the instance's end.
type span struct {
	Start time.Time `json:"t"`
	Kind  Kind      `json:"k"`
	On    []string  `json:"on,omitempty"`
}

// pricePoint: the instance's price from At on.
type pricePoint struct {
	At    time.Time `json:"t"`
	Price float64   `json:"p"`
}

// instanceRec is one instance's life.
type instanceRec struct {
	Type   string       `json:"type"`
	Prices []pricePoint `json:"prices"`
	Spans  []span       `json:"-"`            // stored in chunks (store.go)
	End    time.Time    `json:"end,omitzero"` // gone from the cloud's listing
}

// containerRec is one container and the instances it ran on (more than
// one when it was retried elsewhere).
type containerRec struct {
	ContainerInfo
	Instances []string `json:"instances"`
}

// DefaultRetention is how long the ledger keeps an instance after it is
// gone: a month's projection needs the month so far.
const DefaultRetention = 35 * 24 * time.Hour

// Ledger is the cost ledger. Its records are guarded by mu; Observe is
// called from the engine's loop, reports from any goroutine.
type Ledger struct {
	mu        sync.Mutex
	insts     map[string]*instanceRec
	conts     map[string]*containerRec
	dirty     map[string]struct{} // store keys changed since the last Pending (store.go)
	retention time.Duration
	nextPrune time.Time
	// pruned is the dollars, by type and kind, of the instances pruned so
	// far: with the kept ones' it makes the totals (Totals), which pruning
	// then does not lower.
	pruned map[TypeKind]float64
	seen   map[string]struct{} // Observe's scratch
	// labels are the container labels ("team=genomics") whose dollars
	// are counted for the metrics (CountLabels); prunedLabels is theirs
	// of the pruned instances.
	labels       []string
	prunedLabels map[string]float64
}

// CountLabels sets the container labels ("key=value") whose dollars
// LabelTotals counts; call it before the ledger is used.
func (l *Ledger) CountLabels(labels []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.labels = labels
}

// hasLabelLocked reports whether container id has label ("key=value").
func (l *Ledger) hasLabelLocked(id, label string) bool {
	c := l.conts[id]
	if c == nil {
		return false
	}
	k, v, _ := strings.Cut(label, "=")
	val, ok := c.Labels[k]
	return ok && val == v
}

// New returns an empty ledger keeping gone instances for retention
// (DefaultRetention when 0).
func New(retention time.Duration) *Ledger {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Ledger{
		insts: map[string]*instanceRec{}, conts: map[string]*containerRec{},
		dirty: map[string]struct{}{}, retention: retention,
		pruned: map[TypeKind]float64{}, seen: map[string]struct{}{}, prunedLabels: map[string]float64{},
	}
}

// Unknown returns the containers of samples the ledger has no record of:
// the engine looks up their ContainerInfo for Observe.
func (l *Ledger) Unknown(samples []Sample) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for _, s := range samples {
		for _, id := range s.Containers {
			if _, ok := l.conts[id]; !ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Observe records the instances as they are at now. infos holds what the
// engine found of the containers Unknown returned (one it lacks counts as
// a share of 1). listed: the cloud has been listed since start-up, so an
// instance missing from samples is gone.
func (l *Ledger) Observe(now time.Time, samples []Sample, infos map[string]ContainerInfo, listed bool) {
	now = now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.seen)
	for i := range samples {
		l.observeLocked(now, &samples[i], infos)
		l.seen[samples[i].ID] = struct{}{}
	}
	if listed {
		for id, r := range l.insts {
			if _, ok := l.seen[id]; ok || !r.End.IsZero() {
				continue
			}
			r.End = now
			l.dirty[instKey(id)] = struct{}{}
		}
	}
	l.pruneDueLocked(now)
}

// Tick is Observe with the samples of the last Observe, which would
// change no record: only the hourly pruning may be due.
func (l *Ledger) Tick(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneDueLocked(now.UTC())
}

// pruneDueLocked prunes once an hour.
func (l *Ledger) pruneDueLocked(now time.Time) {
	if now.After(l.nextPrune) {
		l.pruneLocked(now)
		l.nextPrune = now.Add(time.Hour)
	}
}

func (l *Ledger) observeLocked(now time.Time, s *Sample, infos map[string]ContainerInfo) {
	r := l.insts[s.ID]
	if r == nil {
		k := s.Kind
		if k == "" {
			k = Boot // found unprobed: it is still coming up, as far as we know
		}
		born := now
		if !s.Asked.IsZero() && s.Asked.Before(now) {
			born = s.Asked.UTC() // billed from the ask, booting until seen otherwise
		}
		r = &instanceRec{Type: s.Type, Prices: []pricePoint{{At: born, Price: s.Price}}, Spans: []span{{Start: born, Kind: Boot}}}
		l.insts[s.ID] = r
		l.dirty[instKey(s.ID)] = struct{}{}
		l.dirty[chunkKey(s.ID, 0)] = struct{}{}
		l.bootedLocked(r, s, now)
		l.extendLocked(r, s.ID, now, k, s.Containers, infos)
		return
	}
	if !r.End.IsZero() { // listed again after it was missed
		r.End = time.Time{}
		l.dirty[instKey(s.ID)] = struct{}{}
	}
	if last := r.Prices[len(r.Prices)-1]; last.Price != s.Price {
		r.Prices = append(r.Prices, pricePoint{At: now, Price: s.Price})
		l.dirty[instKey(s.ID)] = struct{}{}
	}
	if s.Kind == "" {
		return
	}
	l.bootedLocked(r, s, now)
	l.extendLocked(r, s.ID, now, s.Kind, s.Containers, infos)
}

// bootedLocked ends r's boot when s says it ended, before now: from then
// on the instance sat idle until a pass saw it otherwise.
func (l *Ledger) bootedLocked(r *instanceRec, s *Sample, now time.Time) {
	if s.Kind == Boot || s.Kind == "" || s.Booted.IsZero() || !s.Booted.Before(now) || len(r.Spans) == 0 {
		return
	}
	if last := r.Spans[len(r.Spans)-1]; last.Kind == Boot && s.Booted.After(last.Start) {
		l.extendLocked(r, s.ID, s.Booted.UTC(), Idle, nil, nil)
	}
}

// extendLocked records that from at on instance id (record r) was doing
// kind with containers on.
func (l *Ledger) extendLocked(r *instanceRec, id string, at time.Time, kind Kind, on []string, infos map[string]ContainerInfo) {
	if len(r.Spans) == 0 { // a header whose spans were never written
		r.Spans = append(r.Spans, span{Start: at, Kind: kind, On: slices.Clone(on)})
	} else {
		last := &r.Spans[len(r.Spans)-1]
		switch {
		case last.Kind == kind && slices.Equal(last.On, on):
			return
		case last.Start.Equal(at):
			// Changed again within the same instant: the newer state wins.
			last.Kind, last.On = kind, slices.Clone(on)
		default:
			r.Spans = append(r.Spans, span{Start: at, Kind: kind, On: slices.Clone(on)})
		}
	}
	l.dirty[chunkKey(id, (len(r.Spans)-1)/chunkSpans)] = struct{}{}
	l.addContainersLocked(id, on, infos)
}

// addContainersLocked records that ids ran on instance inst.
func (l *Ledger) addContainersLocked(inst string, ids []string, infos map[string]ContainerInfo) {
	for _, id := range ids {
		c := l.conts[id]
		if c == nil {
			info, ok := infos[id]
			if !ok || info.Share <= 0 {
				info.Share = 1
			}
			c = &containerRec{ContainerInfo: info}
			l.conts[id] = c
		}
		if !slices.Contains(c.Instances, inst) {
			c.Instances = append(c.Instances, inst)
			l.dirty[contKey(id)] = struct{}{}
		}
	}
}

// pruneLocked drops the instances gone for longer than the retention, and
// the containers that ran only on them.
func (l *Ledger) pruneLocked(now time.Time) {
	cut := now.Add(-l.retention)
	for id, r := range l.insts {
		if r.End.IsZero() || !r.End.Before(cut) {
			continue
		}
		for _, p := range r.portions(time.Time{}, r.End) {
			l.pruned[TypeKind{Type: r.Type, Kind: p.kind}] += p.dollars
		}
		if len(l.labels) > 0 {
			l.allocate(r, time.Time{}, r.End, func(c string, _ Kind, d float64) {
				for _, lb := range l.labels {
					if l.hasLabelLocked(c, lb) {
						l.prunedLabels[lb] += d
					}
				}
			})
		}
		for k := 0; k*chunkSpans < len(r.Spans); k++ {
			l.dirty[chunkKey(id, k)] = struct{}{}
		}
		delete(l.insts, id)
		l.dirty[instKey(id)] = struct{}{}
		l.dirty[keyTotals] = struct{}{}
	}
	for id, c := range l.conts {
		if !slices.ContainsFunc(c.Instances, func(i string) bool { return l.insts[i] != nil }) {
			delete(l.conts, id)
			l.dirty[contKey(id)] = struct{}{}
		}
	}
}
