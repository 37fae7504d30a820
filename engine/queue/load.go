// The queue's side of a store's Load: records decoded on any goroutine,
// the index built from them on the loading one.

package queue

import "dispatch-tui/engine/store"

// loader takes a Load's records into q, which is not shared yet (Open).
type loader struct{ q *Queue }

// Decode decodes a record without touching q: it runs on the pipeline's
// decoders (store.Pipeline), several at once.
func (loader) Decode(body []byte) (any, error) {
	c := &Container{}
	if err := decodeContainer(body, c); err != nil {
		return nil, err
	}
	c.setHints()
	return c, nil
}

// Add puts a decoded record into the index. The records come in the
// order the store read them, so the index (its shape ids, the order of
// active and finished) is what a load one record at a time would build.
func (l loader) Add(v any) (uint64, string, error) {
	q, c := l.q, v.(*Container)
	q.shared.record(c)
	c.shape = q.shapeLocked(c.RuntimeConstraints)
	q.byID.put(c)
	q.countLocked(c)
	if c.State.Final() {
		q.finished = append(q.finished, c)
	} else {
		q.active = append(q.active, c)
	}
	q.nextSeq = max(q.nextSeq, c.Seq+1)
	return c.Seq, c.ID, nil
}

var _ store.Records = loader{}
