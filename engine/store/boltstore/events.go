// The event log's storage: batches of events under their Seq range.

package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/store"
)

// The event log is stored in batches: each write (a flush, a submit)
// stores its events as one value, the events' JSON each ended by a
// newline, under a 16-byte key, the first and last Seq (big-endian). A
// pass of thousands of events is then one Put and a few contiguous pages,
// not a Put, a seek from the root and a share of a leaf each.
//
// A batch holds consecutive Seqs only (putEvents cuts a write at a gap:
// concurrent writers interleave their Seqs), so batches never overlap,
// key order is Seq order, and an event's place in its batch is its Seq
// minus the first.
//
// A batch is stored by putAlone (bigvalue.go): a large one in a bucket of
// its own, so that its pages are written once, and the events bucket's
// leaves hold only bucket headers and the small batches of single verbs.
//
// A store of the previous layout (one event per 8-byte key in "events")
// is migrated at Open and that bucket deleted: an older binary then finds
// no events, creates the bucket again and numbers its events from 1; a
// later Open migrates those after the newest batch (migrateEvents).
var (
	bucketEvents       = []byte("event_batches")
	bucketLegacyEvents = []byte("events")
)

// maxBatchEvents bounds a batch, so that retention (which deletes whole
// batches) stays close to its count and pruneBatch is honoured.
const maxBatchEvents = 4096

func eventBatchKey(first, last uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, first)
	binary.BigEndian.PutUint64(k[8:], last)
	return k
}

// batchRange returns the first and last Seq of the batch under key k.
func batchRange(k []byte) (first, last uint64, ok bool) {
	if len(k) != 16 {
		return 0, 0, false
	}
	first, last = binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])
	return first, last, first <= last
}

// batchValue returns the events of the batch under k, whose cursor value
// is v (nil for a batch in a bucket of its own).
func batchValue(eb *bolt.Bucket, k, v []byte) ([]byte, error) {
	val, err := storedAlone(eb, k, v)
	if err != nil {
		return nil, fmt.Errorf("event batch: %w", err)
	}
	return val, nil
}

// putEvents writes b's events (in Seq order) to the events bucket as
// batches of consecutive Seqs; their JSON lines are b's, which must not
// change until the transaction ends (bbolt keeps the values until
// commit).
func putEvents(eb *bolt.Bucket, b *store.Batch) error {
	eb.FillPercent = appendFill
	for i := 0; i < b.Events(); {
		first, last, n, lines := b.EventRun(i, maxBatchEvents)
		if i+n < b.Events() && b.EventSeq(i+n) <= last {
			return fmt.Errorf("events out of order: %d after %d", b.EventSeq(i+n), last)
		}
		if err := putEventBatch(eb, first, last, lines); err != nil {
			return err
		}
		i += n
	}
	return nil
}

// putEventBatch stores the batch of events first to last, v.
func putEventBatch(eb *bolt.Bucket, first, last uint64, v []byte) error {
	if err := putAlone(eb, eventBatchKey(first, last), v); err != nil {
		return fmt.Errorf("event batch %d–%d: %w", first, last, err)
	}
	return nil
}

// pruneEvents deletes the batches whose events all have seq ≤ newest-keep,
// oldest first, at most store.MaxDeletesPerFlush events (but at least one batch).
func pruneEvents(eb *bolt.Bucket, newest, keep uint64) error {
	if newest <= keep {
		return nil
	}
	cut := newest - keep
	type old struct {
		k      []byte
		bucket bool
	}
	var drop []old
	n := uint64(0)
	cur := eb.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		first, last, ok := batchRange(k)
		if !ok || last > cut || (n > 0 && n+last-first+1 > store.MaxDeletesPerFlush) {
			break
		}
		n += last - first + 1
		drop = append(drop, old{k, v == nil})
	}
	for _, o := range drop {
		if err := deleteAlone(eb, o.k, o.bucket); err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
	}
	return nil
}

// eachEvent calls fn with the JSON of each event of batch v from the
// skip-th on, and its Seq.
func eachEvent(k, v []byte, skip uint64, fn func(seq uint64, j []byte) (bool, error)) error {
	first, last, _ := batchRange(k)
	seq := first
	for ; seq < first+skip && len(v) > 0; seq++ {
		i := bytes.IndexByte(v, '\n')
		if i < 0 {
			break
		}
		v = v[i+1:]
	}
	for ; len(v) > 0; seq++ {
		i := bytes.IndexByte(v, '\n')
		if i < 0 || seq > last {
			return fmt.Errorf("event batch %x: malformed", k)
		}
		if more, err := fn(seq, v[:i]); err != nil || !more {
			return err
		}
		v = v[i+1:]
	}
	if seq != last+1 {
		return fmt.Errorf("event batch %x: %d events, want %d", k, seq-first, last-first+1)
	}
	return nil
}

// reseq returns event JSON j with its "seq" set to seq (a migrated
// event renumbered, or one stored in another layout). The fields'
// order is not kept; readers decode by name.
func reseq(j []byte, seq uint64) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(j, &fields); err != nil {
		return nil, err
	}
	fields["seq"] = strconv.AppendUint(nil, seq, 10)
	return json.Marshal(fields)
}

// readEvents calls fn with the events of Seq > since, oldest first, from
// the events bucket, until fn returns false.
func readEvents(eb *bolt.Bucket, since uint64, fn func(seq uint64, j []byte) (bool, error)) error {
	more := true
	cur := eb.Cursor()
	var from [8]byte
	binary.BigEndian.PutUint64(from[:], since+1)
	// The batch holding since+1 starts at it (Seek finds it) or before
	// (the one before the first that starts after it).
	k, v := cur.Seek(from[:])
	if first, _, _ := batchRange(k); k == nil || first > since+1 {
		var pk, pv []byte
		if k == nil {
			pk, pv = cur.Last()
		} else {
			pk, pv = cur.Prev()
		}
		if _, last, ok := batchRange(pk); ok && last > since {
			k, v = pk, pv
		} else {
			k, v = cur.Seek(from[:])
		}
	}
	for ; k != nil && more; k, v = cur.Next() {
		first, _, ok := batchRange(k)
		if !ok {
			return fmt.Errorf("event batch %x: bad key", k)
		}
		val, err := batchValue(eb, k, v)
		if err != nil {
			return err
		}
		skip := uint64(0)
		if since >= first {
			skip = since + 1 - first
		}
		err = eachEvent(k, val, skip, func(seq uint64, j []byte) (bool, error) {
			var err error
			more, err = fn(seq, j)
			return more, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// loadEvents migrates a store's events of the previous layout, then calls
// fn with the newest n events, oldest first, and returns the next Seq.
func loadEvents(tx *bolt.Tx, n int, fn func(seq uint64, j []byte) error) (uint64, error) {
	eb := tx.Bucket(bucketEvents)
	if old := tx.Bucket(bucketLegacyEvents); old != nil {
		if err := migrateEvents(eb, old); err != nil {
			return 0, err
		}
		if err := tx.DeleteBucket(bucketLegacyEvents); err != nil {
			return 0, fmt.Errorf("migrate events: %w", err)
		}
	}
	cur := eb.Cursor()
	k, _ := cur.Last()
	_, next, ok := batchRange(k)
	if k == nil {
		return 1, nil
	} else if !ok {
		return 0, fmt.Errorf("event batch %x: bad key", k)
	}
	next++
	// The batches holding the newest n, newest first.
	type batch struct{ k, v []byte }
	var bs []batch
	have := uint64(0)
	for k, v := cur.Last(); k != nil && have < uint64(n); k, v = cur.Prev() {
		first, last, ok := batchRange(k)
		if !ok {
			return 0, fmt.Errorf("event batch %x: bad key", k)
		}
		bs = append(bs, batch{k, v})
		have += last - first + 1
	}
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		val, err := batchValue(eb, b.k, b.v)
		if err != nil {
			return 0, err
		}
		skip := uint64(0)
		if i == len(bs)-1 && have > uint64(n) {
			skip = have - uint64(n)
		}
		err = eachEvent(b.k, val, skip, func(seq uint64, j []byte) (bool, error) {
			return true, fn(seq, j)
		})
		if err != nil {
			return 0, fmt.Errorf("load events: %w", err)
		}
	}
	return next, nil
}

// migrateEvents writes the events of the previous layout (bucket old, one
// per 8-byte Seq) as batches. Events an older binary wrote after this
// layout's (it numbers from 1 again, not seeing the batches) are
// renumbered after the newest batch, in their order. Otherwise each
// event's JSON is copied as it is (the previous layout's is the same),
// which makes the migration of a large log a matter of a second or less.
func migrateEvents(eb, old *bolt.Bucket) error {
	var newest uint64
	if k, _ := eb.Cursor().Last(); k != nil {
		_, newest, _ = batchRange(k)
	}
	cur := old.Cursor()
	renumber := false
	if k, _ := cur.First(); len(k) == 8 && binary.BigEndian.Uint64(k) <= newest {
		renumber = true
	}
	// A batch's buffer is its own: bbolt keeps the values until commit.
	var buf []byte
	var first, last uint64
	var prefix []byte
	put := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := putEventBatch(eb, first, last, buf)
		buf = nil
		return err
	}
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if len(k) != 8 {
			return fmt.Errorf("migrate event %x: bad key", k)
		}
		seq := binary.BigEndian.Uint64(k)
		if renumber {
			seq = newest + 1
		}
		if seq <= newest {
			return fmt.Errorf("migrate event %x: after %d", k, newest)
		}
		if len(buf) > 0 && (seq != last+1 || seq-first >= maxBatchEvents) {
			if err := put(); err != nil {
				return fmt.Errorf("migrate events: %w", err)
			}
		}
		if len(buf) == 0 {
			first = seq
		}
		// The JSON is copied if it starts with its Seq, as written.
		prefix = strconv.AppendUint(append(prefix[:0], `{"seq":`...), seq, 10)
		if renumber || !bytes.HasPrefix(v, append(prefix, ',')) || bytes.IndexByte(v, '\n') >= 0 {
			j, err := reseq(v, seq)
			if err != nil {
				return fmt.Errorf("migrate event %x: %w", k, err)
			}
			buf = append(buf, j...)
		} else {
			buf = append(buf, v...)
		}
		buf = append(buf, '\n')
		last, newest = seq, seq
	}
	if err := put(); err != nil {
		return fmt.Errorf("migrate events: %w", err)
	}
	return nil
}
