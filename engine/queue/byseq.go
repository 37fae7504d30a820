// Containers in submission order, for pages that stay stable.

package queue

import (
	"cmp"
	"slices"
)

// q.bySeq holds every container of byID in submission order (Seq), for
// listing in pages that stay stable while containers are submitted, start
// and end: a page ends at a Seq, and the next one starts after it.

func compareSeq(c *Container, seq uint64) int { return cmp.Compare(c.Seq, seq) }

// addSeqLocked adds a submitted batch to q.bySeq. Its Seqs are one range
// reserved together, so no other container falls between them: the batch
// goes in as one run, at the end unless a later batch overtook it.
func (q *Queue) addSeqLocked(batch []*Container) {
	if len(batch) == 0 {
		return
	}
	for _, c := range batch {
		q.labelAddLocked(c)
	}
	n := len(q.bySeq)
	if n == 0 || q.bySeq[n-1].Seq < batch[0].Seq {
		q.bySeq = append(q.bySeq, batch...)
		return
	}
	i, _ := slices.BinarySearchFunc(q.bySeq, batch[0].Seq, compareSeq)
	q.bySeq = slices.Insert(q.bySeq, i, batch...)
}

// removeSeqLocked takes dropped containers out of q.bySeq, in one pass of
// copies.
func (q *Queue) removeSeqLocked(cs []*Container) {
	if len(cs) == 0 {
		return
	}
	pos := make([]int, 0, len(cs))
	for _, c := range cs {
		if i, ok := slices.BinarySearchFunc(q.bySeq, c.Seq, compareSeq); ok && q.bySeq[i] == c {
			pos = append(pos, i)
		}
	}
	slices.Sort(pos)
	a := q.bySeq
	w := 0
	if len(pos) > 0 {
		w = pos[0]
	}
	for k, p := range pos {
		end := len(a)
		if k+1 < len(pos) {
			end = pos[k+1]
		}
		w += copy(a[w:], a[p+1:end])
	}
	if len(pos) > 0 {
		clear(a[w:])
		q.bySeq = a[:w]
	}
}

// EachFrom calls fn, under the queue's lock, with every container whose
// Seq is at least from, in Seq (submission) order, until fn returns false.
// A walk that ends at Seq s and resumes with EachFrom(s+1) neither repeats
// nor skips a container that existed throughout; containers submitted
// meanwhile may land before s+1 and are then not seen. fn must not call the
// Queue (see Each).
func (q *Queue) EachFrom(from uint64, fn func(c *Container) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, _ := slices.BinarySearchFunc(q.bySeq, from, compareSeq)
	for _, c := range q.bySeq[i:] {
		if !fn(c) {
			return
		}
	}
}
