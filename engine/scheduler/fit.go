package scheduler

import (
	"strconv"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
)

// fit is the scheduler's cached form of Fit.
type fit struct {
	candidates []int // type indices within max_price_factor of the cheapest, by price
	why        string
}

// Fits reports whether some configured type can hold a container with rc,
// and if not, an explanation naming the largest type.
// It is safe to call from any goroutine.
func (s *Scheduler) Fits(rc queue.Constraints) (bool, string) {
	f := ComputeFit(s.types, rc, s.reserveRAM, s.cfg.Dispatcher.MaxPriceFactor)
	return len(f.Candidates) > 0, f.Why
}

// FitsPreemptible is Fits for a container whose scheduling.preemptible is
// preemptible: one that is not may use only types that are not.
func (s *Scheduler) FitsPreemptible(rc queue.Constraints, preemptible bool) (bool, string) {
	f := ComputeFitFor(s.types, rc, s.reserveRAM, s.cfg.Dispatcher.MaxPriceFactor, preemptible)
	return len(f.Candidates) > 0, f.Why
}

// fitForContainer is fitFor for c, honouring scheduling.preemptible: a
// container that is not preemptible gets only the types that are not (from
// a cache of its own). With no preemptible type configured, both are the
// same and c's flag is not even read.
func (s *Scheduler) fitForContainer(c *queue.Container) *fit {
	if s.onDemand == nil {
		s.onDemand = newOnDemandFits(s.types)
	}
	if !s.onDemand.anyPreemptible || c.Scheduling.IsPreemptible() {
		return s.fitFor(c.RuntimeConstraints)
	}
	return s.onDemand.fitFor(s, c.RuntimeConstraints)
}

// onDemandFits caches the fits of containers that may not run on
// preemptible types.
type onDemandFits struct {
	anyPreemptible bool
	small          [64]fitSlot
	m              map[queue.Constraints]fit
}

func newOnDemandFits(types []cloud.InstanceType) *onDemandFits {
	o := &onDemandFits{m: map[queue.Constraints]fit{}}
	for _, t := range types {
		o.anyPreemptible = o.anyPreemptible || t.Preemptible
	}
	return o
}

func (o *onDemandFits) fitFor(s *Scheduler, rc queue.Constraints) *fit {
	h := uint(rc.VCPUs)*31 + uint(rc.RAM>>20)*17 + uint(rc.Scratch>>20)*7 + uint(rc.GPUs)
	e := &o.small[h%uint(len(o.small))]
	if e.ok && e.key == rc {
		return &e.f
	}
	f, ok := o.m[rc]
	if !ok {
		cf := ComputeFitFor(s.types, rc, s.reserveRAM, s.cfg.Dispatcher.MaxPriceFactor, false)
		if len(o.m) > 100000 {
			clear(o.m)
		}
		f = fit{candidates: cf.Candidates, why: cf.Why}
		o.m[rc] = f
	}
	*e = fitSlot{key: rc, f: f, ok: true}
	return &e.f
}

// fitFor is ComputeFit for this scheduler's types, cached by shape.
func (s *Scheduler) fitFor(rc queue.Constraints) *fit {
	// A small direct-mapped cache in front of the map: queues hold few
	// distinct shapes, and hashing a map key per container costs more.
	h := uint(rc.VCPUs)*31 + uint(rc.RAM>>20)*17 + uint(rc.Scratch>>20)*7 + uint(rc.GPUs)
	e := &s.fitSmall[h%uint(len(s.fitSmall))]
	if e.ok && e.key == rc {
		return &e.f
	}
	f, ok := s.fitCache[rc]
	if !ok {
		cf := ComputeFit(s.types, rc, s.reserveRAM, s.cfg.Dispatcher.MaxPriceFactor)
		if len(s.fitCache) > 100000 {
			clear(s.fitCache)
		}
		f = fit{candidates: cf.Candidates, why: cf.Why}
		s.fitCache[rc] = f
	}
	*e = fitSlot{key: rc, f: f, ok: true}
	return &e.f
}

type fitSlot struct {
	key queue.Constraints
	f   fit
	ok  bool
}

// Fit is the result of ComputeFit.
type Fit struct {
	Candidates []int  // indices into types, cheapest first, within the price factor
	Why        string // when Candidates is empty: what is needed and what the largest type has
}

// ComputeFit finds the types (sorted by price) that hold rc with
// reserveRAM extra, keeping those priced within factor × the cheapest.
func ComputeFit(types []cloud.InstanceType, rc queue.Constraints, reserveRAM int64, factor float64) Fit {
	return ComputeFitFor(types, rc, reserveRAM, factor, true)
}

// ComputeFitFor is ComputeFit for a container that may (preemptible) or
// may not run on preemptible types. One that may takes them like any
// other type, so it prefers them when they are cheaper.
func ComputeFitFor(types []cloud.InstanceType, rc queue.Constraints, reserveRAM int64, factor float64, preemptible bool) Fit {
	var out Fit
	cheapest := -1.0
	onDemand := 0
	for i, t := range types {
		if t.Preemptible && !preemptible {
			continue
		}
		onDemand++
		if !typeHolds(t, rc, reserveRAM) {
			continue
		}
		if cheapest < 0 {
			cheapest = t.Price
		}
		if t.Price <= cheapest*factor+1e-12 {
			out.Candidates = append(out.Candidates, i)
		}
	}
	if len(out.Candidates) == 0 {
		if onDemand == 0 {
			out.Why = "every instance type is preemptible, and the container is not (submit it with scheduling.preemptible = true)"
			return out
		}
		out.Why = explainNoFit(types, rc, reserveRAM)
		if !preemptible && onDemand < len(types) && len(ComputeFit(types, rc, reserveRAM, factor).Candidates) > 0 {
			out.Why = "only preemptible types hold it, and it is not preemptible (submit it with scheduling.preemptible = true): " + out.Why
		}
	}
	return out
}

// typeHolds reports whether one instance of t can hold rc on its own.
func typeHolds(t cloud.InstanceType, rc queue.Constraints, reserveRAM int64) bool {
	return rc.VCPUs <= t.VCPUs && addSize(rc.RAM, reserveRAM) <= t.RAM && rc.Scratch <= t.Scratch && rc.GPUs <= t.GPUs
}

// explainNoFit says which resource rc needs more of than any type has.
func explainNoFit(types []cloud.InstanceType, rc queue.Constraints, reserveRAM int64) string {
	if len(types) == 0 {
		return "no instance types are configured"
	}
	ram := addSize(rc.RAM, reserveRAM)
	var maxT cloud.InstanceType
	for _, t := range types {
		maxT.VCPUs = max(maxT.VCPUs, t.VCPUs)
		maxT.RAM = max(maxT.RAM, t.RAM)
		maxT.Scratch = max(maxT.Scratch, t.Scratch)
		maxT.GPUs = max(maxT.GPUs, t.GPUs)
	}
	switch {
	case ram > maxT.RAM:
		return "needs " + config.FormatSize(ram) + " RAM (with reserve_extra_ram), largest is " + config.FormatSize(maxT.RAM)
	case rc.VCPUs > maxT.VCPUs:
		return "needs " + strconv.Itoa(rc.VCPUs) + " vCPUs, largest is " + strconv.Itoa(maxT.VCPUs)
	case rc.Scratch > maxT.Scratch:
		return "needs " + config.FormatSize(rc.Scratch) + " scratch, largest is " + config.FormatSize(maxT.Scratch)
	case rc.GPUs > maxT.GPUs:
		return "needs " + strconv.Itoa(rc.GPUs) + " GPUs, largest has " + strconv.Itoa(maxT.GPUs)
	}
	return "no single type has every resource it needs (vCPUs " + strconv.Itoa(rc.VCPUs) + ", RAM " +
		config.FormatSize(ram) + ", scratch " + config.FormatSize(rc.Scratch) + ", GPUs " + strconv.Itoa(rc.GPUs) + ")"
}
