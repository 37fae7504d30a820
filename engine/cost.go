// The cost ledger's feed and reads (engine/cost, docs/design.md §6.1):
// each step samples the pool's instances into the ledger after the pass,
// so that the pass's starts count from its own time; what changed goes out
// in the next pass's flush (or at Close).

package engine

import (
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// costFeed is the scratch of observeCost, reused from step to step (Step
// is serialised by stepMu).
type costFeed struct {
	views   []worker.InstanceView
	samples []cost.Sample
	// taken: views were copied since the ledger was last fed, at the
	// pool's generation gen. fed: the ledger has seen the instances at
	// generation fedGen, with the cloud listed or not (fedListed).
	taken     bool
	gen       uint64
	fed       bool
	fedGen    uint64
	fedListed bool
	// copies counts the copies of the instances taken (tests).
	copies uint64
}

// takeViews copies the pool's instances into the feed, for Quiet and the
// ledger: at 10,000 instances a copy is the largest part of a quiet
// step's cost, so a skipped pass's step makes one at most.
func (e *Engine) takeViews() []worker.InstanceView {
	f := &e.costFeed
	f.gen = e.pool.Generation() // before the copy: a change after it moves it again
	f.views = e.pool.Instances(f.views)
	f.taken = true
	f.copies++
	return f.views
}

// observeCost gives the ledger the instances as the pool sees them now:
// takeViews, or the copy step took for Quiet when no pass ran since. When
// the pool's generation and its listing are what the ledger last saw,
// every sample would be what it was and Observe would change nothing
// (a span ends only when a sample differs): the ledger is then only told
// the time, for its pruning, and no instance is walked.
func (e *Engine) observeCost() {
	f := &e.costFeed
	listed := e.pool.Listed()
	if !f.taken {
		if f.fed && listed == f.fedListed && e.pool.Generation() == f.fedGen {
			e.ledger.Tick(e.clock.Now())
			return
		}
		e.takeViews()
	}
	f.taken = false
	f.samples = f.samples[:0]
	for i := range f.views {
		v := &f.views[i]
		if v.ID == "" {
			continue // a create in flight: nothing is billed yet
		}
		k, ok := costKind(v)
		if !ok {
			continue
		}
		s := cost.Sample{ID: string(v.ID), Type: v.Type, Price: v.Price, Kind: k, Asked: v.AskedAt, Booted: v.BootedAt}
		if k == cost.Running {
			slices.Sort(v.Containers) // v is the pool's copy
			s.Containers = v.Containers
		}
		f.samples = append(f.samples, s)
	}
	var infos map[string]cost.ContainerInfo
	if ids := e.ledger.Unknown(f.samples); len(ids) > 0 {
		infos = make(map[string]cost.ContainerInfo, len(ids))
		for _, id := range ids {
			// Get's view is a copy of the record: the ledger keeps its labels.
			if c, ok := e.queue.Get(id); ok {
				infos[id] = cost.ContainerInfo{Labels: c.Labels, Share: e.share(c.RuntimeConstraints.VCPUs, c.RuntimeConstraints.RAM, c.InstanceType)}
			}
		}
	}
	e.ledger.Observe(e.clock.Now(), f.samples, infos, listed)
	f.fed, f.fedGen, f.fedListed = true, f.gen, listed
}

// costKind is what the ledger calls what v is doing; false for an instance
// the ledger does not follow. An instance not yet probed (after a restart)
// is "": the ledger keeps its last span.
func costKind(v *worker.InstanceView) (cost.Kind, bool) {
	switch v.State {
	case worker.StateUnknown:
		return "", true
	case worker.StateBooting:
		return cost.Boot, true
	case worker.StateShutdown:
		return cost.Drain, true
	case worker.StateIdle, worker.StateRunning:
		switch {
		case len(v.Containers) > 0:
			return cost.Running, true
		case v.IdleBehavior == worker.IdleDrain:
			return cost.Drain, true
		}
		return cost.Idle, true
	}
	return "", false
}

// share is a container's requested share of its instance type: the larger
// of its vCPU share and its RAM share, at most 1 (1 when the type is not
// configured).
func (e *Engine) share(vcpus int, ram int64, typeName string) float64 {
	for _, t := range e.cfg.InstanceTypes {
		if t.Name != typeName {
			continue
		}
		s := 0.0
		if t.VCPUs > 0 {
			s = float64(vcpus) / float64(t.VCPUs)
		}
		if t.RAM > 0 {
			s = max(s, float64(ram)/float64(t.RAM))
		}
		if s <= 0 || s > 1 {
			return 1
		}
		return s
	}
	return 1
}

// Cost reports what the instances cost since since (zero: all the ledger
// keeps), summed by by.
func (e *Engine) Cost(by cost.By, since time.Time) view.CostReport {
	r := e.ledger.Report(cost.Query{By: by, Since: since, Now: e.clock.Now(), StateOf: func(id string) string {
		if c, ok := e.queue.Get(id); ok {
			return string(c.State)
		}
		return ""
	}})
	e.mu.Lock()
	for _, b := range e.lastStats.Budgets {
		r.Budgets = append(r.Budgets, view.BudgetLine{Name: b.Name, RatePerHour: b.RatePerHour, Limit: b.Limit, Over: b.RatePerHour > b.Limit+1e-9})
	}
	e.mu.Unlock()
	r.Queued = cost.EstimateQueued(e.waitingWork(), e.typePrice)
	return r
}

// waitingWork reads the queue for the queued estimate: the types the
// waiting containers are locked to, those not locked yet grouped by the
// types they may get (held ones wait for an operator, not for dollars, and
// are left out), and the run times of the containers that completed, by
// the type they ran on, in the order they ended.
func (e *Engine) waitingWork() cost.Waiting {
	w := cost.Waiting{Runs: map[string][]time.Duration{}}
	// Queues hold few distinct shapes: one fit per shape, not per container.
	type shape struct {
		rc          queue.Constraints
		labels      string
		preemptible bool
	}
	unlocked := map[shape]int{}
	candidates := map[shape][]string{}
	e.queue.Each(func(c *queue.Container) bool {
		switch {
		case c.Held && c.State.Waiting():
		case c.State == queue.Locked:
			w.Locked = append(w.Locked, c.InstanceType)
		case c.State == queue.Queued:
			k := shape{rc: c.RuntimeConstraints, preemptible: c.Scheduling.IsPreemptible()}
			if c.HasConstraints() {
				k.labels = config.FormatLabels(c.Scheduling.Constraints)
			}
			if _, ok := candidates[k]; !ok {
				candidates[k] = e.sched.CandidateTypes(k.rc, c.Scheduling.Constraints, k.preemptible)
			}
			unlocked[k]++
		case c.State == queue.Complete && c.InstanceType != "" && c.FinishedAt.After(c.StartedAt) && !c.StartedAt.IsZero():
			runs := append(w.Runs[c.InstanceType], c.FinishedAt.Sub(c.StartedAt))
			if len(runs) >= 2*cost.RunsKept { // only the last RunsKept count: keep the walk's memory bounded
				runs = append(runs[:0], runs[len(runs)-cost.RunsKept:]...)
			}
			w.Runs[c.InstanceType] = runs
		}
		return true
	})
	// Shapes that may get the same types are one group.
	byTypes := map[string]*cost.Unlocked{}
	for k, n := range unlocked {
		ts := candidates[k]
		key := strings.Join(ts, "\x00")
		u, ok := byTypes[key]
		if !ok {
			u = &cost.Unlocked{Types: ts}
			byTypes[key] = u
		}
		u.Containers += n
	}
	for _, u := range byTypes {
		w.Unlocked = append(w.Unlocked, *u)
	}
	return w
}

// typePrice is a configured type's price in $/h.
func (e *Engine) typePrice(name string) (float64, bool) {
	for _, t := range e.cfg.InstanceTypes {
		if t.Name == name {
			return t.Price, true
		}
	}
	return 0, false
}

// ContainerCosts returns what each of ids cost so far.
func (e *Engine) ContainerCosts(ids []string) map[string]float64 {
	return e.ledger.Costs(ids, e.clock.Now())
}

// CostTotals returns the dollars by type and kind since the ledger began
// (the metrics' counters).
func (e *Engine) CostTotals() map[cost.TypeKind]float64 { return e.ledger.Totals(e.clock.Now()) }

// Now is the engine's clock's time (the API's "since" is back from it).
func (e *Engine) Now() time.Time { return e.clock.Now() }

// CostLabelTotals returns the dollars the containers of each [[budget]]
// label have cost since the ledger began (the metrics' counters).
func (e *Engine) CostLabelTotals() map[string]float64 { return e.ledger.LabelTotals(e.clock.Now()) }
