// Which instance types fit a container, cached by shape.

package scheduler

import (
	"strconv"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// fit is the scheduler's cached form of Fit.
type fit struct {
	candidates []int // type indices within max_price_factor of the cheapest, by price
	why        string
	noLabels   bool // no type has every label asked for
}

// fitKey is what a fit depends on: the shape and the labels asked for.
type fitKey struct {
	rc     queue.Constraints
	labels labelSet
}

// fitForContainer is fitFor for c: the labels it asks for and, when some
// type is preemptible and c may not use them, the on-demand bit. Most
// containers have no labels, and the hint says so without reading them.
func (s *Scheduler) fitForContainer(c *queue.Container) *fit {
	var want labelSet
	if c.HasConstraints() {
		want = s.labelSetOf(c)
	}
	if s.labels.anyPreemptible && !c.Scheduling.IsPreemptible() {
		want |= onDemandLabel
	}
	return s.fitFor(c.RuntimeConstraints, want)
}

// fitFor is ComputeFit for this scheduler's types and the labels asked
// for, cached by shape and labels.
func (s *Scheduler) fitFor(rc queue.Constraints, labels labelSet) *fit {
	if labels != 0 {
		return s.labelledFitFor(rc, labels)
	}
	// A small direct-mapped cache in front of the map: queues hold few
	// distinct shapes, and hashing a map key per container costs more.
	h := uint(rc.VCPUs)*31 + uint(rc.RAM>>20)*17 + uint(rc.Scratch>>20)*7 + uint(rc.GPUs)
	e := &s.fitSmall[h%uint(len(s.fitSmall))]
	if e.ok && e.key == rc {
		return &e.f
	}
	f, ok := s.fitCache[fitKey{rc: rc}]
	if !ok {
		f = s.computeFit(rc, 0)
	}
	*e = fitSlot{key: rc, f: f, ok: true}
	return &e.f
}

// labelledFitFor is fitFor for containers that ask for labels (few): the
// map only.
func (s *Scheduler) labelledFitFor(rc queue.Constraints, labels labelSet) *fit {
	key := fitKey{rc, labels}
	h := uint(rc.VCPUs)*31 + uint(rc.RAM>>20)*17 + uint(rc.Scratch>>20)*7 + uint(rc.GPUs) + uint(labels)*13
	e := &s.fitSmallL[h%uint(len(s.fitSmallL))]
	if e.ok && e.key == key {
		return &e.f
	}
	f, ok := s.fitCache[key]
	if !ok {
		f = s.computeFit(rc, labels)
	}
	*e = fitSlotL{key: key, f: f, ok: true}
	return &e.f
}

type fitSlotL struct {
	key fitKey
	f   fit
	ok  bool
}

// computeFit computes a fit and keeps it in the map.
func (s *Scheduler) computeFit(rc queue.Constraints, labels labelSet) fit {
	f := s.explainFit(rc, labels)
	if len(s.fitCache) > 100000 {
		clear(s.fitCache)
	}
	s.fitCache[fitKey{rc, labels}] = f
	return f
}

// explainFit computes a fit without caching it; when only preemptible
// types could hold a container kept off them, its reason says so and how
// to allow them.
func (s *Scheduler) explainFit(rc queue.Constraints, labels labelSet) fit {
	factor := s.cfg.Dispatcher.MaxPriceFactor
	cf, noLabels := computeLabelledFit(s.types, &s.labels, rc, labels, s.reserveRAM, factor)
	f := fit{candidates: cf.Candidates, why: cf.Why, noLabels: noLabels}
	if labels&onDemandLabel != 0 && len(f.candidates) == 0 {
		if pf, pNo := computeLabelledFit(s.types, &s.labels, rc, labels&^onDemandLabel, s.reserveRAM, factor); !pNo && len(pf.Candidates) > 0 {
			f.noLabels = false
			f.why = "only preemptible types hold it, and it is not preemptible (submit it with scheduling.preemptible = true)"
		}
	}
	return f
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
	var out Fit
	cheapest := -1.0
	for i, t := range types {
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
		out.Why = explainNoFit(types, rc, reserveRAM)
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
		return "needs " + view.FormatSize(ram) + " RAM (with reserve_extra_ram), largest is " + view.FormatSize(maxT.RAM)
	case rc.VCPUs > maxT.VCPUs:
		return "needs " + strconv.Itoa(rc.VCPUs) + " vCPUs, largest is " + strconv.Itoa(maxT.VCPUs)
	case rc.Scratch > maxT.Scratch:
		return "needs " + view.FormatSize(rc.Scratch) + " scratch, largest is " + view.FormatSize(maxT.Scratch)
	case rc.GPUs > maxT.GPUs:
		return "needs " + strconv.Itoa(rc.GPUs) + " GPUs, largest has " + strconv.Itoa(maxT.GPUs)
	}
	return "no single type has every resource it needs (vCPUs " + strconv.Itoa(rc.VCPUs) + ", RAM " +
		view.FormatSize(ram) + ", scratch " + view.FormatSize(rc.Scratch) + ", GPUs " + strconv.Itoa(rc.GPUs) + ")"
}
