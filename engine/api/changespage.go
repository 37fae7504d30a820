// The changes page written as the queue makes it: each chunk of views
// encoded with its costs, without reflection, into one reused buffer.

package api

import (
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// Every watching console reads every change, a page of up to 10,000
// containers each time; made as a slice of views, copied again into
// ContainerItems and encoded by reflection, a page was a quarter of the
// daemon's core in the churn and most of its garbage (BENCHMARKS.md,
// helper garbage). The body is byte for byte what writeJSON writes for
// the ChangesBody (TestChangesPageMatchesEncodingJSON).

// pageFlushAt is how much of a page is buffered before it is written.
const pageFlushAt = 64 << 10

// pageBufs holds the buffers of pages being written, reused by the next.
var pageBufs = sync.Pool{New: func() any { b := make([]byte, 0, pageFlushAt+16<<10); return &b }}

// pageWriter writes a changes page's body: its items as the queue hands
// them over (items), then the rest (finish).
type pageWriter struct {
	w       http.ResponseWriter
	costs   func(ids []string) map[string]float64
	buf     []byte
	ids     []string // scratch: a chunk's ids, for costs
	n       int      // items written
	started bool     // the status and headers are sent
	err     error    // the first write or encoding that failed: the rest is dropped
}

// items appends a chunk of views, each with its cost.
func (pw *pageWriter) items(vs []view.Container) {
	if pw.err != nil {
		return
	}
	pw.ids = pw.ids[:0]
	for i := range vs {
		pw.ids = append(pw.ids, vs[i].ID)
	}
	costs := pw.costs(pw.ids)
	clear(pw.ids) // keep no ids past the chunk
	for i := range vs {
		if pw.n == 0 {
			pw.buf = append(pw.buf, `{"items":[`...)
		} else {
			pw.buf = append(pw.buf, ',')
		}
		pw.n++
		var err error
		if pw.buf, err = appendItem(pw.buf, &vs[i], costs[vs[i].ID]); err != nil {
			pw.fail(err)
			return
		}
		if len(pw.buf) >= pageFlushAt {
			pw.flush()
		}
	}
}

// finish appends what follows the items: ChangesBody's other fields,
// encoded by encoding/json (a few numbers and the removed ids), so that
// ChangesBody stays the one statement of the page's shape.
func (pw *pageWriter) finish(ch queue.Changes) {
	if pw.err != nil {
		return
	}
	body := ChangesBody{Items: []ContainerItem{}, Removed: ch.Removed, Generation: ch.Generation,
		More: ch.More, Latest: ch.Latest, ItemsAvailable: ch.Total}
	if body.Removed == nil {
		body.Removed = []string{}
	}
	j, err := json.Marshal(body)
	if err != nil {
		pw.fail(err)
		return
	}
	const empty = `{"items":[]`
	if pw.n == 0 {
		pw.buf = append(pw.buf, j...)
	} else {
		pw.buf = append(append(pw.buf, ']'), j[len(empty):]...)
	}
	pw.buf = append(pw.buf, '\n') // as json.Encoder ends a value
	pw.flush()
}

// flush writes what is buffered, the headers first.
func (pw *pageWriter) flush() {
	if pw.err != nil || len(pw.buf) == 0 {
		return
	}
	if !pw.started {
		pw.started = true
		h := pw.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Content-Type-Options", "nosniff")
		pw.w.WriteHeader(http.StatusOK)
	}
	if _, err := pw.w.Write(pw.buf); err != nil {
		pw.err = err // the client left: nothing to tell it
	}
	pw.buf = pw.buf[:0]
}

// fail drops the rest of a page that cannot be encoded. The status was
// sent with the first part, so the client learns it from a body that
// does not decode, and reads again; encoding/json would have sent an
// empty 200.
func (pw *pageWriter) fail(err error) {
	slog.Error("changes page: cannot encode, the page is cut", "err", err)
	pw.err = err
	pw.buf = pw.buf[:0]
}

// appendItem appends the JSON of v with its cost, as encoding/json writes
// a ContainerItem: the view's fields, then "cost".
func appendItem(b []byte, v *view.Container, cost float64) ([]byte, error) {
	b, err := queue.AppendViewJSON(b, v)
	if err != nil {
		return b, err
	}
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		return b, &json.UnsupportedValueError{Str: strconv.FormatFloat(cost, 'g', -1, 64)}
	}
	b = append(b[:len(b)-1], `,"cost":`...) // the view's closing brace
	return append(appendJSONFloat(b, cost), '}'), nil
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest text that reads back as f, in exponent form only below 1e-6 or
// from 1e21, with an exponent of at least two digits shortened to one
// ("1e-7", not "1e-07").
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// writeChanges answers a changes request with the page from since.
func (s *server) writeChanges(w http.ResponseWriter, cq changesQuery) {
	bp := pageBufs.Get().(*[]byte)
	pw := pageWriter{w: w, costs: s.eng.ContainerCosts, buf: (*bp)[:0]}
	ch, err := s.eng.ContainerChangesEach(cq.since, cq.limit, pw.items)
	if err != nil {
		// Before any item: ChangesEach hands none over on an error.
		writeError(w, classify(err))
	} else {
		pw.finish(ch)
	}
	if cap(pw.buf) <= 4*pageFlushAt { // an item far over the flush point grew it: let that one go
		*bp = pw.buf[:0]
		pageBufs.Put(bp)
	}
}
