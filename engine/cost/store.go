// The ledger's records as the store keeps them: one JSON value per
// instance ("i/" and its id: type, prices, end), its spans in chunks of
// chunkSpans ("s/", its id, "/" and the chunk's number), one per container
// ("c/" and its id) and the pruned instances' totals ("totals"), in its own
// bucket, written in the queue's flushes (queue.Part) and read back at
// open. A change rewrites the instance's header and its last chunk only,
// however long its life.

package cost

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Bucket is the store bucket the ledger's records live in.
const Bucket = "cost"

const keyTotals = "totals"

func instKey(id string) string { return "i/" + id }

// chunkSpans is how many spans one stored chunk holds.
const chunkSpans = 64

// chunkKey is the key of chunk k of instance id's spans: zero-padded, so
// that the chunks of one instance are read in order.
func chunkKey(id string, k int) string { return fmt.Sprintf("s/%s/%08d", id, k) }

// splitChunkKey reads a chunk key back.
func splitChunkKey(k string) (id string, chunk int, ok bool) {
	rest := strings.TrimPrefix(k, "s/")
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	return rest[:i], n, err == nil
}
func contKey(id string) string { return "c/" + id }

// PartName names the ledger's bucket (queue.Part).
func (l *Ledger) PartName() string { return Bucket }

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
		if err = json.Unmarshal(value, r); err == nil && len(r.Prices) == 0 {
			err = fmt.Errorf("no prices")
		}
		l.insts[strings.TrimPrefix(k, "i/")] = r
	case strings.HasPrefix(k, "s/"):
		// Chunks come after their headers ("i/" < "s/") and in order.
		id, n, ok := splitChunkKey(k)
		r := l.insts[id]
		var spans []span
		switch {
		case !ok || r == nil:
			err = fmt.Errorf("spans of no instance")
		case len(r.Spans) != n*chunkSpans:
			err = fmt.Errorf("chunk %d after %d spans", n, len(r.Spans))
		default:
			err = json.Unmarshal(value, &spans)
			r.Spans = append(r.Spans, spans...)
		}
	case strings.HasPrefix(k, "c/"):
		c := &containerRec{}
		err = json.Unmarshal(value, c)
		l.conts[strings.TrimPrefix(k, "c/")] = c
	case k == keyTotals:
		var t []storedTotal
		err = json.Unmarshal(value, &t)
		for _, x := range t {
			if x.Label != "" {
				l.prunedLabels[x.Label] = x.Dollars
			} else {
				l.pruned[TypeKind{x.Type, x.Kind}] = x.Dollars
			}
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
	Type    string  `json:"type,omitempty"`
	Kind    Kind    `json:"kind,omitempty"`
	Label   string  `json:"label,omitempty"` // a counted label's total, not a type's
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
	case strings.HasPrefix(k, "s/"):
		id, n, _ := splitChunkKey(k)
		if r := l.insts[id]; r != nil && n*chunkSpans < len(r.Spans) {
			v = r.Spans[n*chunkSpans : min((n+1)*chunkSpans, len(r.Spans))]
		}
	case strings.HasPrefix(k, "c/"):
		if c := l.conts[strings.TrimPrefix(k, "c/")]; c != nil {
			v = c
		}
	case k == keyTotals:
		t := make([]storedTotal, 0, len(l.pruned))
		for tk, d := range l.pruned {
			t = append(t, storedTotal{Type: tk.Type, Kind: tk.Kind, Dollars: d})
		}
		for lb, d := range l.prunedLabels {
			t = append(t, storedTotal{Label: lb, Dollars: d})
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
