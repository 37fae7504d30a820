// Sorting and filtering large tables off the UI goroutine.

package table

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
)

// Sorting or filtering a million rows takes 20–40 ms, more than a frame:
// on a table of asyncMin rows or more, a sort or filter change is computed
// by a job off the UI goroutine (OrderJob, SetOrder) while the previous
// rows stay on screen. A job reads the table's slices as they were when it
// was made: the table replaces them and never changes them in place while
// a job may read them (shared), and hands its sort scratch to the job.

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
	case t.pendSort:
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
// table's data at one moment, read only, so that it may run on any
// goroutine.
type work struct {
	rows   []Row
	cols   []Column
	search []string

	sort     bool
	sortCol  int
	sortDesc bool
	keys     []uint64 // column keyCol's keys (numericKeys), if any
	keyCol   int
	buf, tmp []numKey // radix scratch (allocated when short)
	// order is, when sorting, a buffer to fill (allocated when short);
	// else the current order, read only.
	order []int32

	match    func(string) bool
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
	search      []string // search texts filled in (nil: unchanged)
	keys        []uint64 // keys extracted for keyCol (nil: unchanged)
	keyCol      int
	buf, tmp    []numKey // the scratch, back to the table
	viewLow     string
	viewCol     int
	stopped     bool // superseded: nothing else is set
}

// stopEvery is how many rows a job filters between looks at whether it
// is still wanted (a few microseconds).
const stopEvery = 4096

func (w *work) stopped() bool { return w.stop != nil && w.stop() }

// work takes the table's data for a computation; async hands it to a
// job: the scratch goes with it, and order and view are then not to be
// rewritten in place.
func (t *Table) work(async bool) *work {
	w := &work{rows: t.rows, cols: t.cols, search: t.search,
		sort: t.dirtySort || t.pendSort, sortCol: t.sortCol, sortDesc: t.sortDesc, keys: t.keys, keyCol: t.keyCol,
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
	if r.search != nil {
		t.search = r.search
	}
	if r.keys != nil {
		t.keys, t.keyCol = r.keys, r.keyCol
	}
	t.viewLow, t.viewCol = r.viewLow, r.viewCol
	t.dirtySort, t.dirtyView, t.rowsNew = false, false, false
	t.relocate()
}

func (w *work) run() (r result) {
	r.buf, r.tmp, r.order = w.buf, w.tmp, w.order
	if w.sort {
		n := len(w.rows)
		if cap(r.order) >= n {
			r.order = r.order[:n]
		} else {
			r.order = make([]int32, n)
		}
		for i := range r.order {
			r.order[i] = int32(i)
		}
		r.sorted = true
		if w.sortCol >= 0 && w.sortCol < len(w.cols) && !w.sortOrder(&r) {
			return result{buf: r.buf, tmp: r.tmp, stopped: true}
		}
	}
	if w.match == nil {
		r.view = r.order
		return r
	}
	search := w.search
	if slices.Contains(search, "") {
		// A new slice, not filled in place: the table's may be read
		// by others (a Base, another job).
		search = slices.Clone(search)
		fillSearch(w.rows, search)
		r.search = search
	}
	from := r.order
	if w.narrowed {
		from = w.narrow
	}
	v := make([]int32, 0, len(from)/4)
	for k, i := range from {
		if k%stopEvery == 0 && w.stopped() {
			return result{buf: r.buf, tmp: r.tmp, stopped: true}
		}
		text := search[i]
		if w.matchCol >= 0 {
			text = strings.ToLower(w.rows[i].Cells[w.matchCol])
		}
		if w.match(text) != w.invert {
			v = append(v, i)
		}
	}
	r.view = v
	r.viewCol = w.matchCol
	if !w.invert {
		r.viewLow = w.matchLow
	}
	return r
}

// sortOrder sorts r.order (the identity) by the sort column; rows with
// equal keys stay in source order, as a stable sort leaves them. The keys
// are copied out next to their row index first: comparing through the
// rows (a stable merge sort fetching two rows per comparison) took 490 ms
// at 1,000,000 rows. Numbers are radix-sorted (a key press must not cost
// an n log n of comparisons), text by pdqsort with ties broken by index.
// It reports false when it stopped, superseded.
func (w *work) sortOrder(r *result) bool {
	c := w.sortCol
	order := r.order
	if w.cols[c].Numeric {
		keys := w.keys
		if w.keyCol != c || len(keys) != len(w.rows) {
			// Prepare extracts the sort column's keys off the UI
			// goroutine; another column's are extracted here, once
			// per refresh (kept by apply).
			keys = nil
			if ks, ok := numericKeys(w.rows, c); ok {
				keys, r.keys, r.keyCol = ks, ks, c
			}
		}
		if keys != nil {
			n := len(order)
			if cap(r.buf) < n || cap(r.tmp) < n {
				r.buf, r.tmp = make([]numKey, n), make([]numKey, n)
			}
			ks, tmp := r.buf[:n], r.tmp[:n]
			var desc uint64
			if w.sortDesc {
				desc = ^desc
			}
			for j, i := range order {
				ks[j] = numKey{keys[i] ^ desc, i}
			}
			if w.stopped() {
				return false
			}
			ks = radixSort(ks, tmp)
			if w.stopped() {
				return false
			}
			for j := range ks {
				order[j] = ks[j].i
			}
			return true
		}
	}
	dir := 1
	if w.sortDesc {
		dir = -1
	}
	ks := make([]strKey, len(order))
	for j, i := range order {
		ks[j] = strKey{w.rows[i].Cells[c], i}
	}
	if w.stopped() {
		return false
	}
	slices.SortFunc(ks, func(a, b strKey) int {
		if r := strings.Compare(a.k, b.k); r != 0 {
			return r * dir
		}
		return cmp.Compare(a.i, b.i)
	})
	if w.stopped() {
		return false
	}
	for j := range ks {
		order[j] = ks[j].i
	}
	return true
}
