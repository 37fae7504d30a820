// The storage of Rows: rows by slot in pages of a fixed size, so that a
// copy that grows never moves the rows it holds.

package backend

// pageRows is how many rows a full page holds (about 700 kB of rows).
const pageRows = 4096

// pages holds rows by slot: slot i is row i%pageRows of page i/pageRows.
// A new row takes the next slot; only the last page is ever reallocated
// as it fills, so growing never copies more than a page (one slice of
// every row would be copied whole past its capacity: at a million rows,
// a second copy of them all for a moment).
type pages struct {
	p [][]Row
	n int
}

// newPages makes room for n rows (whole pages, the last one just big
// enough).
func newPages(n int) pages {
	var ps pages
	for left := n; left > 0; left -= pageRows {
		ps.p = append(ps.p, make([]Row, 0, min(left, pageRows)))
	}
	return ps
}

func (ps *pages) len() int { return ps.n }

// at is slot i's row.
func (ps *pages) at(i int) *Row { return &ps.p[i/pageRows][i%pageRows] }

// push puts r in the next slot.
func (ps *pages) push(r Row) {
	k := ps.n / pageRows
	if k == len(ps.p) {
		ps.p = append(ps.p, make([]Row, 0, 64))
	}
	pg := ps.p[k]
	if len(pg) == cap(pg) {
		g := make([]Row, len(pg), min(2*cap(pg), pageRows))
		copy(g, pg)
		pg = g
	}
	ps.p[k] = append(pg, r)
	ps.n++
}

// truncate drops the slots from n on, and their strings.
func (ps *pages) truncate(n int) {
	for i := n; i < ps.n; i++ {
		*ps.at(i) = Row{}
	}
	for k := range ps.p {
		ps.p[k] = ps.p[k][:min(max(n-k*pageRows, 0), len(ps.p[k]))]
	}
	ps.p = ps.p[:(n+pageRows-1)/pageRows]
	ps.n = n
}
