// Sorting and filtering large tables off the UI goroutine.

package table

import (
	"runtime"
	"sync/atomic"
)

// Sorting or filtering a million rows takes 20–40 ms, more than a frame:
// on a table of asyncMin rows or more, a sort or filter change is computed
// by a job off the UI goroutine (OrderJob, SetOrder) while the previous
// rows stay on screen; so is the new order after a refresh of the same
// Source (its slots still name the same rows meanwhile). A job reads the
// source a chunk at a time (Source.Read) and the table's order as it was
// when the job was made: the table does not change that in place while a
// job may read it (shared), and hands its sort scratch to the job.

// async is the state of the table's background sort and filter.
type async struct {
	asyncMin int // rows from which a sort or filter change runs as a job (0 = never)
	// live is the generation of the latest job; a job whose generation
	// it no longer is stops early (the atomic is what a job reads).
	live     *atomic.Uint64
	jobGen   uint64
	pend     bool    // a job for jobGen is wanted and its result not applied
	pendSort bool    // ... and it sorts (else it only filters)
	jobOut   bool    // the job for jobGen was handed out
	spare    []int32 // an order no one reads, for a sort to fill
}

// SetAsync makes a sort or filter change on a table of n rows or more run
// as a job (0, the default, computes everything when it is needed).
func (t *Table) SetAsync(n int) { t.asyncMin = n }

// Busy reports the work in flight: "sorting", "filtering", or "" when the
// rows shown are sorted and filtered as asked.
func (t *Table) Busy() string {
	t.ensure()
	switch {
	case !t.pend:
		return ""
	case t.pendSort && t.sortCol >= 0:
		return "sorting"
	}
	return "filtering"
}

// request starts waiting for a job: a newer generation, which supersedes
// (and stops) the job in flight, if any.
func (t *Table) request() {
	t.pendSort = t.pendSort || t.dirtySort
	t.dirtySort, t.dirtyView = false, false
	t.jobGen++
	t.live.Store(t.jobGen)
	t.pend, t.jobOut = true, false
}

// supersede drops the job asked for: its result will not be applied, and
// it stops early.
func (t *Table) supersede() {
	t.pend, t.pendSort = false, false
	t.jobGen++
	t.live.Store(t.jobGen)
}

// OrderResult is what an OrderJob computed, for SetOrder.
type OrderResult struct {
	gen uint64
	r   result
}

// OrderJob returns the job computing the sort and filter asked for, to run
// off the UI goroutine (it reads only what the table will not change in
// place), or nil when there is none to start. Hand its result to
// SetOrder. A job superseded by a newer one, or by new rows, stops early.
func (t *Table) OrderJob() func() OrderResult {
	if t.asyncMin == 0 {
		return nil
	}
	t.ensure()
	if !t.pend || t.jobOut {
		return nil
	}
	t.jobOut = true
	w := t.work(true)
	gen, live := t.jobGen, t.live
	w.stop = func() bool { return live.Load() != gen }
	return func() OrderResult { return OrderResult{gen: gen, r: w.run()} }
}

// SetOrder applies a job's result if it is still the latest asked for
// (the rows unchanged, no newer sort or filter); the cursor stays on its
// row if that is still shown. A result superseded is dropped.
func (t *Table) SetOrder(o OrderResult) {
	t.reclaim(&o.r)
	if o.r.stopped || !t.pend || o.gen != t.jobGen {
		return
	}
	t.pend, t.pendSort = false, false
	t.apply(o.r)
}

// work is one computation of the order and the shown rows from the
// table's source, so that it may run on any goroutine.
type work struct {
	src  Source
	cols []Column

	sort     bool
	sortCol  int
	sortDesc bool
	buf, tmp []numKey // radix scratch (allocated when short)
	// order is, when sorting, a buffer to fill (allocated when short);
	// else the current order, read only.
	order []int32

	match    func([]byte) bool
	matchCol int
	invert   bool
	matchLow string
	narrow   []int32 // when narrowed: the shown rows, filtered instead of order
	narrowed bool

	stop func() bool // reports that the result is no longer wanted (nil: never)
}

// result is what work.run computed.
type result struct {
	order, view []int32
	sorted      bool
	buf, tmp    []numKey // the scratch, back to the table
	viewLow     string
	viewCol     int
	stopped     bool // superseded: nothing else is set
}

// stopEvery is how many rows a job reads between looks at whether it is
// still wanted (a few microseconds to a millisecond), and how many it
// reads under one Source.Read, so that the owner's changes wait no
// longer.
const stopEvery = 4096

func (w *work) stopped() bool { return w.stop != nil && w.stop() }

// chunks calls f for each chunk of up to stopEvery of n items, each in
// one Read of the source; it reports false when the work was superseded.
// yield lets other goroutines run between chunks.
func (w *work) chunks(n int, yield bool, f func(rd Reader, from, to int)) bool {
	return w.span(0, n, yield, f)
}

// span is chunks of the items from lo to hi.
func (w *work) span(lo, hi int, yield bool, f func(rd Reader, from, to int)) bool {
	for from := lo; from < hi; from += stopEvery {
		if w.stopped() {
			return false
		}
		if yield && from > lo {
			runtime.Gosched()
		}
		to := min(from+stopEvery, hi)
		w.src.Read(func(rd Reader) { f(rd, from, to) })
	}
	return true
}

// work takes the table's data for a computation; async hands it to a
// job: the scratch goes with it, and order and view are then not to be
// rewritten in place.
func (t *Table) work(async bool) *work {
	w := &work{src: t.src, cols: t.cols,
		sort: t.dirtySort || t.pendSort || t.rowsNew, sortCol: t.sortCol, sortDesc: t.sortDesc,
		buf: t.numBuf, tmp: t.numTmp, order: t.order,
		match: t.match, matchCol: t.matchCol, invert: t.invert, matchLow: t.matchLow}
	if !w.sort && t.narrows() {
		// The pattern only grew: what it matches is a subset of
		// what the shown rows matched, in the same order.
		w.narrow, w.narrowed = t.view, true
	}
	switch {
	case async:
		t.numBuf, t.numTmp = nil, nil
		if w.sort {
			w.order, t.spare = t.spare, nil // the order shown stays as it is
		} else {
			t.shared = true
		}
		if w.narrowed {
			t.shared = true
		}
	case w.sort && t.shared:
		w.order, t.spare = t.spare, nil // a superseded job may still be reading t.order
	}
	return w
}

// reclaim takes back the sort scratch a computation used.
func (t *Table) reclaim(r *result) {
	if r.buf != nil && cap(r.buf) >= cap(t.numBuf) {
		t.numBuf, t.numTmp = r.buf, r.tmp
	}
	r.buf, r.tmp = nil, nil
}

// apply installs a computed order and view and puts the cursor back on
// its row.
func (t *Table) apply(r result) {
	if r.stopped {
		return
	}
	old := t.order
	t.order, t.view = r.order, r.view
	if r.sorted {
		if !t.shared && len(old) > 0 && len(r.order) > 0 && &old[0] != &r.order[0] {
			// No job reads the order replaced: the next sort's buffer
			// (a million rows' is 4 MB).
			t.spare = old
		}
		t.shared = false // a new slice, or rewritten in place because it was not shared
	}
	t.viewLow, t.viewCol = r.viewLow, r.viewCol
	t.dirtySort, t.dirtyView, t.rowsNew = false, false, false
	t.relocate()
}

func (w *work) run() (r result) {
	r.buf, r.tmp, r.order = w.buf, w.tmp, w.order
	byCol := w.sort && w.sortCol >= 0 && w.sortCol < len(w.cols)
	switch {
	case byCol && !w.cols[w.sortCol].Numeric:
		// The rows that are not gone read with their text (textOrder).
		if !w.textOrder(&r, w.sortCol) {
			return result{buf: r.buf, tmp: r.tmp, stopped: true}
		}
		r.sorted = true
	case w.sort:
		// The source's rows that are not gone, in slot order.
		var n, live int
		w.src.Read(func(rd Reader) { n, live = rd.Len(), rd.Live() })
		if cap(r.order) >= n {
			r.order = r.order[:0]
		} else {
			r.order = make([]int32, 0, n)
		}
		if live == n { // none gone: no row need be asked
			r.order = r.order[:n]
			for i := range r.order {
				r.order[i] = int32(i)
			}
		} else if !w.chunks(n, false, func(rd Reader, from, to int) {
			for i := from; i < to; i++ {
				if !rd.Gone(i) {
					r.order = append(r.order, int32(i))
				}
			}
		}) {
			return result{buf: r.buf, tmp: r.tmp, stopped: true}
		}
		r.sorted = true
		if byCol && !w.sortOrder(&r) {
			return result{buf: r.buf, tmp: r.tmp, stopped: true}
		}
	}
	if w.match == nil {
		r.view = r.order
		return r
	}
	from := r.order
	if w.narrowed {
		from = w.narrow
	}
	v, ok := w.filter(from)
	if !ok {
		return result{buf: r.buf, tmp: r.tmp, stopped: true}
	}
	r.view = v
	r.viewCol = w.matchCol
	if !w.invert {
		r.viewLow = w.matchLow
	}
	return r
}

// sortOrder sorts r.order (the rows in slot order) by the sort column,
// a numeric one; rows with equal keys stay in slot order, as a stable
// sort leaves them. The keys are copied out next to their row index
// first: comparing through the rows (a stable merge sort fetching two
// rows per comparison) took 490 ms at 1,000,000 rows. Numbers are
// radix-sorted (a key press must not cost an n log n of comparisons); a
// column with a row that has no number is sorted by its text
// (textOrder). It reports false when it stopped, superseded.
func (w *work) sortOrder(r *result) bool {
	c := w.sortCol
	order := r.order
	n := len(order)
	if cap(r.buf) < n || cap(r.tmp) < n {
		r.buf, r.tmp = make([]numKey, n), make([]numKey, n)
	}
	ks, tmp := r.buf[:n], r.tmp[:n]
	numeric := true
	if !w.chunks(n, false, func(rd Reader, from, to int) {
		for j := from; j < to && numeric; j++ {
			f, ok := rd.Num(int(order[j]), c)
			numeric = ok
			ks[j] = numKey{orderedBits(f, w.sortDesc), order[j]}
		}
	}) {
		return false
	}
	if numeric {
		ks = radixSort(ks, tmp)
		if w.stopped() {
			return false
		}
		for j := range ks {
			order[j] = ks[j].i
		}
		return true
	}
	// A row without a number: the column is sorted by its text.
	return w.textOrder(r, c)
}
