// The containers by label: a bulk verb's label selector reads its
// label's Seqs, not the whole queue.

package queue

import (
	"slices"
)

// A bulk verb with a label selector walked every container to find the
// hundredth it changes (the churn's pct=N: a walk of the whole queue a
// round, 8 µs of the daemon's CPU a change at 300,000, BENCHMARKS.md,
// helper daemon). Labels never change once submitted, so each label
// (key=value) lists the containers that have it by Seq, ascending, with
// their slots in the index by id (index.go): 12 bytes a container a label,
// no pointer for the collector to follow. Dropped containers stay listed
// (their slot then empty, or another's) until a list is half dead, then
// it is compacted.

// labelKey is one label, key and value.
type labelKey struct{ key, value string }

// labelList is the containers with one label: Seqs ascending and their
// slots in q.byID; about dead of them dropped.
type labelList struct {
	seqs  []uint64
	slots []uint32
	dead  int
}

// labelIndexMax bounds the labels listed: a queue whose labels are all
// different (an id per container) would otherwise list each. Past it,
// labels not yet listed are not indexed (full), and a selector on one
// walks the queue as before.
const labelIndexMax = 1 << 14

// labelIndex is the queue's lists by label (q.mu).
type labelIndex struct {
	lists map[labelKey]*labelList
	full  bool
}

// labelAddLocked lists c (in q.byID) under each of its labels; a Seq
// listed already (an undropped container) gets its new slot.
func (q *Queue) labelAddLocked(c *Container) {
	slot, ok := q.byID.slot(c.ID)
	if !ok {
		return
	}
	x := &q.labels
	for k, v := range c.Labels {
		l := x.lists[labelKey{k, v}]
		if l == nil {
			if x.full || len(x.lists) >= labelIndexMax {
				x.full = true
				continue
			}
			if x.lists == nil {
				x.lists = map[labelKey]*labelList{}
			}
			l = &labelList{}
			x.lists[labelKey{k, v}] = l
		}
		if n := len(l.seqs); n == 0 || l.seqs[n-1] < c.Seq {
			l.seqs, l.slots = append(l.seqs, c.Seq), append(l.slots, slot)
			continue
		}
		i, found := slices.BinarySearch(l.seqs, c.Seq)
		if found {
			l.slots[i] = slot
			continue
		}
		l.seqs, l.slots = slices.Insert(l.seqs, i, c.Seq), slices.Insert(l.slots, i, slot)
	}
}

// labelAt is the container listed at i of l, or nil if it was dropped.
func (q *Queue) labelAt(l *labelList, i int) *Container {
	if s := l.slots[i]; int(s) < len(q.byID.recs) {
		if c := q.byID.recs[s]; c != nil && c.Seq == l.seqs[i] {
			return c
		}
	}
	return nil
}

// labelsDroppedLocked counts dropped containers (already out of q.byID)
// dead in their labels' lists, and compacts a list once half of it is.
func (q *Queue) labelsDroppedLocked(drop []*Container) {
	for _, c := range drop {
		for k, v := range c.Labels {
			l := q.labels.lists[labelKey{k, v}]
			if l == nil {
				continue
			}
			l.dead++
			if 2*l.dead <= len(l.seqs) {
				continue
			}
			w := 0
			for i := range l.seqs {
				if q.labelAt(l, i) != nil {
					l.seqs[w], l.slots[w] = l.seqs[i], l.slots[i]
					w++
				}
			}
			l.seqs, l.slots, l.dead = l.seqs[:w], l.slots[:w], 0
		}
	}
}

// EachLabelled calls fn with each container labelled key=value whose Seq
// is at least from, in submission order, until fn returns false; it
// reports false, calling nothing, when that label is not indexed (the
// caller walks the queue: EachFrom). fn runs under the queue's lock.
func (q *Queue) EachLabelled(key, value string, from uint64, fn func(c *Container) bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.labels.lists[labelKey{key, value}]
	if l == nil {
		return !q.labels.full // none has it, unless it went unlisted
	}
	i, _ := slices.BinarySearch(l.seqs, from)
	for ; i < len(l.seqs); i++ {
		if c := q.labelAt(l, i); c != nil && !fn(c) {
			return true
		}
	}
	return true
}
