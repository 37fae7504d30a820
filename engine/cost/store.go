// The ledger's records as the store keeps them: one JSON value per
// instance ("i/" and its id), per container ("c/" and its id) and the
// pruned instances' totals ("totals"), in its own bucket, written in the
// queue's flushes (queue.Part) and read back at open.

package cost

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Bucket is the store bucket the ledger's records live in.
const Bucket = "cost"

const keyTotals = "totals"

func instKey(id string) string { return "i/" + id }
func contKey(id string) string { return "c/" + id }

// PartBucket names the ledger's bucket (queue.Part).
func (l *Ledger) PartBucket() string { return Bucket }

// LoadRecord reads back one stored record (queue.Part): at open, before
// the ledger is used.
func (l *Ledger) LoadRecord(key, value []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := string(key)
	var err error
	switch {
	case strings.HasPrefix(k, "i/"):
		r := &instanceRec{}
		if err = json.Unmarshal(value, r); err == nil && (len(r.Prices) == 0 || len(r.Spans) == 0) {
			err = fmt.Errorf("no prices or no spans")
		}
		l.insts[strings.TrimPrefix(k, "i/")] = r
	case strings.HasPrefix(k, "c/"):
		c := &containerRec{}
		err = json.Unmarshal(value, c)
		l.conts[strings.TrimPrefix(k, "c/")] = c
	case k == keyTotals:
		var t []storedTotal
		err = json.Unmarshal(value, &t)
		for _, x := range t {
			l.pruned[TypeKind{x.Type, x.Kind}] = x.Dollars
		}
	default:
		err = fmt.Errorf("unknown kind of record")
	}
	if err != nil {
		return fmt.Errorf("load cost record %q: %w", k, err)
	}
	return nil
}

// storedTotal is one entry of the pruned totals as stored.
type storedTotal struct {
	Type    string  `json:"type"`
	Kind    Kind    `json:"kind"`
	Dollars float64 `json:"dollars"`
}

// PendingRecords returns the records changed since the last call, a nil
// value for one deleted (queue.Part), and forgets they changed.
func (l *Ledger) PendingRecords() (keys []string, values [][]byte, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.dirty {
		v, err := l.encodeLocked(k)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		values = append(values, v)
	}
	clear(l.dirty)
	return keys, values, nil
}

// Unwritten takes back records a flush could not write, for the next
// (queue.Part): they are encoded again from the ledger as it is then.
func (l *Ledger) Unwritten(keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		l.dirty[k] = struct{}{}
	}
}

// encodeLocked is the stored value of key, nil when its record is gone.
func (l *Ledger) encodeLocked(k string) ([]byte, error) {
	var v any
	switch {
	case strings.HasPrefix(k, "i/"):
		if r := l.insts[strings.TrimPrefix(k, "i/")]; r != nil {
			v = r
		}
	case strings.HasPrefix(k, "c/"):
		if c := l.conts[strings.TrimPrefix(k, "c/")]; c != nil {
			v = c
		}
	case k == keyTotals:
		t := make([]storedTotal, 0, len(l.pruned))
		for tk, d := range l.pruned {
			t = append(t, storedTotal{tk.Type, tk.Kind, d})
		}
		v = t
	}
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode cost record %q: %w", k, err)
	}
	return b, nil
}
