// Parts: other packages' records kept in the queue's store, read at Open
// and written in the queue's flushes, in the same transaction as the
// containers (the cost ledger's, engine/cost).

package queue

import "dispatch-tui/engine/store"

// Part is a set of records another package keeps in the store.
type Part interface {
	// PartName names the part in the store (a bucket in bbolt, rows of the
	// parts table in PostgreSQL).
	PartName() string
	// LoadRecord is given each stored record at Open.
	LoadRecord(key, value []byte) error
	// PendingRecords returns the records changed since its last call (a
	// nil value deletes the key).
	PendingRecords() (keys []string, values [][]byte, err error)
	// Unwritten gives back keys a flush took but could not write.
	Unwritten(keys []string)
}

// loadParts reads the parts' records.
func (q *Queue) loadParts() error {
	for _, p := range q.opts.Parts {
		if err := q.store.LoadPart(p.PartName(), p.LoadRecord); err != nil {
			return err
		}
	}
	return nil
}

// takeParts collects what the parts have to write; n is how many records.
func (q *Queue) takeParts() (w []store.PartWrite, n int, err error) {
	for _, p := range q.opts.Parts {
		keys, values, err := p.PendingRecords()
		if err != nil {
			q.unwriteParts(w)
			return nil, 0, err
		}
		if len(keys) > 0 {
			w = append(w, store.PartWrite{Name: p.PartName(), Keys: keys, Values: values})
			n += len(keys)
		}
	}
	return w, n, nil
}

// unwriteParts gives the parts back what a failed flush took.
func (q *Queue) unwriteParts(ws []store.PartWrite) {
	for _, w := range ws {
		for _, p := range q.opts.Parts {
			if p.PartName() == w.Name {
				p.Unwritten(w.Keys)
			}
		}
	}
}
