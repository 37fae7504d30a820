// What a scheduler pass reads of the queue besides its containers, with
// their generation: equal inputs, equal pass (scheduler.Quiet).

package queue

// PassInputs is the queue as a pass reads it, in a comparable value:
// Generation covers every container a pass could see change (docs/design.md
// §7.2), the pause flag and the store's health are read beside them.
type PassInputs struct {
	Generation uint64
	Paused     bool
	StoreDown  bool // the store's last write of records failed (Tx.StoreUnavailable)
}

// PassInputs returns the queue's PassInputs now.
func (q *Queue) PassInputs() PassInputs {
	q.mu.Lock()
	defer q.mu.Unlock()
	return PassInputs{Generation: q.gen, Paused: q.paused, StoreDown: !q.health.since.IsZero()}
}
