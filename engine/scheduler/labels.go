// Container and type labels as bit sets, matched with one AND per type.

package scheduler

import (
	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
)

// labelSet is a set of key=value labels as bits: bit i is the i-th distinct
// pair found on the configured types. A container matches a type when its
// set is a subset of the type's, one AND per type instead of comparing
// strings per container and instance.
type labelSet uint64

// unknownLabel is set for a container label no configured type has: no
// type's set contains it, so nothing matches.
const unknownLabel labelSet = 1 << config.MaxLabelPairs

// onDemandLabel is carried by every type that is not preemptible, and asked
// for by a container that may not run on preemptible types: the same AND
// keeps it off them, with no second fit cache.
const onDemandLabel labelSet = 1 << (config.MaxLabelPairs + 1)

// labelIndex numbers the label pairs of the configured types.
type labelIndex struct {
	bit            map[labelPair]labelSet
	types          []labelSet // per type index
	anyPreemptible bool       // some type is preemptible: onDemandLabel tells them apart
}

type labelPair struct{ key, value string }

func newLabelIndex(types []cloud.InstanceType) labelIndex {
	li := labelIndex{bit: map[labelPair]labelSet{}, types: make([]labelSet, len(types))}
	for i, t := range types {
		if t.Preemptible {
			li.anyPreemptible = true
		} else {
			li.types[i] |= onDemandLabel
		}
		for k, v := range t.Labels {
			p := labelPair{k, v}
			b, ok := li.bit[p]
			if !ok {
				if len(li.bit) >= config.MaxLabelPairs {
					// check-config refuses this; the extra pairs match
					// nothing rather than aliasing others.
					continue
				}
				b = 1 << len(li.bit)
				li.bit[p] = b
			}
			li.types[i] |= b
		}
	}
	return li
}

// setOf returns the set of a container's labels.
func (li *labelIndex) setOf(labels map[string]string) labelSet {
	var s labelSet
	for k, v := range labels {
		b, ok := li.bit[labelPair{k, v}]
		if !ok {
			return unknownLabel
		}
		s |= b
	}
	return s
}

// labelSetOf is setOf for a container's labels, remembered per record:
// labels do not change after submission, and a map lookup by pointer costs
// less than reading the labels (another cache line, a map walk and two
// string hashes per label) every pass.
func (s *Scheduler) labelSetOf(c *queue.Container) labelSet {
	s.labelledSeen++
	if ls, ok := s.labelSets[c]; ok {
		return ls
	}
	ls := s.labels.setOf(c.Scheduling.Constraints)
	s.labelSets[c] = ls
	return ls
}

// trimLabelSets forgets the sets of records no longer walked (finished
// ones) once they outnumber those still walked; called after each walk.
func (s *Scheduler) trimLabelSets() {
	if len(s.labelSets) > 2*s.labelledSeen+1024 {
		clear(s.labelSets)
	}
	s.labelledSeen = 0
}

// typeHas reports whether type t carries every label of want.
func (li *labelIndex) typeHas(t int, want labelSet) bool {
	return want&^li.types[t] == 0
}

// computeLabelledFit is ComputeFit over the types that carry every label of
// want; noLabels is set when no type does.
func computeLabelledFit(types []cloud.InstanceType, li *labelIndex, rc queue.Constraints, want labelSet, reserveRAM int64, factor float64) (f Fit, noLabels bool) {
	if want == 0 {
		return ComputeFit(types, rc, reserveRAM, factor), false
	}
	var sub []cloud.InstanceType
	var idx []int
	for i := range types {
		if li.typeHas(i, want) {
			sub = append(sub, types[i])
			idx = append(idx, i)
		}
	}
	if len(sub) == 0 {
		return Fit{}, true
	}
	f = ComputeFit(sub, rc, reserveRAM, factor)
	for j, c := range f.Candidates {
		f.Candidates[j] = idx[c]
	}
	return f, false
}

// noLabelsWhy is the pending reason and submit error of a container whose
// labels no type has.
func noLabelsWhy(labels map[string]string) string {
	return "no instance type has labels " + config.FormatLabels(labels)
}

// FitsSpec reports whether some configured type carries every label, is
// allowed by preemptible, and can hold rc; if not, why. It is safe to call
// from any goroutine.
func (s *Scheduler) FitsSpec(rc queue.Constraints, labels map[string]string, preemptible bool) (bool, string) {
	f := s.explainFit(rc, s.wantOf(labels, preemptible))
	if f.noLabels {
		return false, noLabelsWhy(labels)
	}
	if len(f.candidates) == 0 && len(labels) > 0 {
		return false, f.why + " (among types with labels " + config.FormatLabels(labels) + ")"
	}
	return len(f.candidates) > 0, f.why
}

// CandidateTypes names the types a container of rc asking for labels may
// get (preemptible: it may run on preemptible types): the cheapest that
// holds it and those priced within max_price_factor of it, cheapest first;
// none when no type does. Safe from any goroutine, like FitsSpec.
func (s *Scheduler) CandidateTypes(rc queue.Constraints, labels map[string]string, preemptible bool) []string {
	f := s.explainFit(rc, s.wantOf(labels, preemptible))
	names := make([]string, len(f.candidates))
	for i, t := range f.candidates {
		names[i] = s.types[t].Name
	}
	return names
}

// wantOf is the label set a container asking for labels needs of a type,
// with the on-demand bit when it may not run on preemptible ones.
func (s *Scheduler) wantOf(labels map[string]string, preemptible bool) labelSet {
	want := s.labels.setOf(labels)
	if !preemptible && s.labels.anyPreemptible {
		want |= onDemandLabel
	}
	return want
}
