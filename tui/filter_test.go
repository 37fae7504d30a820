package tui

// The containers view's filter read from the compact rows: the same rows
// as the text the screen shows would give, typed a key at a time
// (narrowing) or set whole, and no allocation per row.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/table"
	"dispatch-tui/tui/theme"
)

// mixedContainers are n containers with every kind of cell a filter
// reads: each state, failures, holds and kills, ages from seconds to
// weeks, sizes, places in the line and other reasons, labels, and names
// in upper case, other scripts and bytes that are not UTF-8.
func mixedContainers(rng *rand.Rand, n int) []view.Container {
	names := []string{"", "job-%d", "Build-%d", "ÄRGER-%d", "Kelvin-\u212a-%d", "İstanbul-%d", "Ⱥx-%d", "bad-\xff-%d", "two words %d"}
	states := []view.State{view.Queued, view.Queued, view.Locked, view.Running, view.Complete, view.Cancelled}
	reasons := []struct {
		code view.ReasonCode
		text string
	}{
		{view.ReasonBooting, "waiting for i-0002 to boot"}, {view.ReasonQuota, "at quota (3 instances)"},
		{view.ReasonHeld, "held"}, {view.ReasonKilled, "Killed by Operator"}, {view.ReasonNone, ""},
	}
	cs := make([]view.Container, n)
	for i := range cs {
		c := &cs[i]
		c.ID = fmt.Sprintf("c-%016x", rng.Uint64())
		c.Name = c.ID
		if f := names[rng.IntN(len(names))]; f != "" {
			c.Name = fmt.Sprintf(f, i)
		}
		c.State = states[rng.IntN(len(states))]
		c.Priority = rng.IntN(6)
		c.Held = rng.IntN(7) == 0
		c.KillRequested = rng.IntN(9) == 0
		c.RuntimeConstraints = view.Constraints{VCPUs: 1 + rng.IntN(8), RAM: []int64{0, 512 << 20, 1 << 30, 3 << 29, 16 << 30}[rng.IntN(5)]}
		c.Attempts, c.MaxAttempts = rng.IntN(3), 3
		if rng.IntN(20) != 0 {
			c.CreatedAt = t0.Add(-time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))
		}
		c.Seq = uint64(i + 1)
		if rng.IntN(3) == 0 {
			c.Labels = map[string]string{"team": fmt.Sprintf("T%d", rng.IntN(4)), "batch": "b" + fmt.Sprint(rng.IntN(3))}
		}
		switch c.State {
		case view.Queued, view.Locked:
			if rng.IntN(2) == 0 {
				c.ReasonCode, c.Pending = view.ReasonPosition, view.Pending{Code: view.ReasonPosition, N: 1 + rng.IntN(200000)}
				c.Reason = c.Pending.Text()
				break
			}
			r := reasons[rng.IntN(len(reasons))]
			c.ReasonCode, c.Reason = r.code, r.text
		case view.Running:
			c.InstanceID = fmt.Sprintf("i-%04d", rng.IntN(50))
		case view.Complete:
			if rng.IntN(4) != 0 {
				code := []int{0, 1, 137}[rng.IntN(3)]
				c.ExitCode = &code
			}
		case view.Cancelled:
			c.ReasonCode, c.Reason = view.ReasonKilled, "Killed by Operator"
		}
	}
	return cs
}

// filterTable is the containers view's table over rows, on the test clock.
func filterTable(rows *backend.Rows, async bool) *table.Table {
	tb := table.New(containerColumns(), theme.New("dark", true, false))
	if async {
		tb.SetAsync(1)
	}
	tb.SetSource(&ctrSource{rows: rows, now: fixedClock})
	return tb
}

// shownIDs is the ids the table shows, in order, once any job is done.
func shownIDs(tb *table.Table) []string {
	if job := tb.OrderJob(); job != nil {
		tb.SetOrder(job())
	}
	var ids []string
	tb.Home()
	for range tb.Shown() {
		ids = append(ids, tb.Cursor())
		tb.Move(1)
	}
	return ids
}

var filterMetas = regexp.MustCompile(`[\\^$.|?*+()\[\]{}]`)

// refFilter is the filter's rule written out on the cells the screen
// shows: a row matches when the lower-cased text of its cells and labels,
// each followed by a space (or of the one column named), contains the
// lower-cased text, or matches it as a regular expression when it uses
// regexp syntax and compiles; a leading ! inverts.
type refFilter struct {
	ids   []string
	cells [][]string // lower-cased cells, then the labels
	text  []string   // the cells and labels, each followed by a space
}

func newRefFilter(rows *backend.Rows) *refFilter {
	ref := &refFilter{}
	(&ctrSource{rows: rows, now: fixedClock}).Read(func(rd table.Reader) {
		for i := range rd.Len() {
			r := rd.Row(i)
			cells := make([]string, 0, len(r.Cells)+1)
			for _, c := range append(r.Cells, r.Hidden) {
				cells = append(cells, strings.ToLower(c))
			}
			ref.ids = append(ref.ids, r.ID)
			ref.cells = append(ref.cells, cells)
			ref.text = append(ref.text, strings.Join(cells, " ")+" ")
		}
	})
	return ref
}

func (ref *refFilter) want(f string) []string {
	pat, inv := strings.CutPrefix(f, "!")
	col := -1
	if name, val, ok := strings.Cut(pat, ":"); ok && name != "" {
		for i, c := range containerColumns() {
			if strings.EqualFold(name, c.Title) || (c.Alias != "" && strings.EqualFold(name, c.Alias)) {
				col, pat = i, val
				break
			}
		}
	}
	if pat == "" {
		return ref.ids
	}
	low := strings.ToLower(pat)
	match := func(s string) bool { return strings.Contains(s, low) }
	if filterMetas.MatchString(pat) {
		if re, err := regexp.Compile("(?i)" + pat); err == nil {
			match = re.MatchString
		}
	}
	var ids []string
	for i, cells := range ref.cells {
		text := ref.text[i]
		if col >= 0 {
			text = cells[col]
		}
		if match(text) != inv {
			ids = append(ids, ref.ids[i])
		}
	}
	return ids
}

// randomFilter is a filter an operator might type: a piece of some row's
// cell in any case, sometimes on one column, inverted, or a regular
// expression (some that do not compile).
func randomFilter(rng *rand.Rand, ref *refFilter) string {
	if rng.IntN(6) == 0 {
		res := []string{"^c-[0-9a-f]", "held|kill", "✗1", "position [0-9]+ in", "(?:i-00)", "[", "c-(", "exit 1 $", "t[0-3] ", "K\\w+", "\\xff"}
		return res[rng.IntN(len(res))]
	}
	cells := ref.cells[rng.IntN(len(ref.cells))]
	k := rng.IntN(len(cells))
	s := cells[k]
	if s == "" {
		s = "-"
	}
	from := rng.IntN(len(s))
	pat := []byte(s[from : from+1+rng.IntN(min(len(s)-from, 12))])
	for i, c := range pat {
		if 'a' <= c && c <= 'z' && rng.IntN(2) == 0 {
			pat[i] = c - 'a' + 'A'
		}
	}
	f := string(pat)
	if rng.IntN(5) == 0 && k < nCtrCols {
		f = strings.ToLower(containerColumns()[k].Title) + ":" + f
	}
	if rng.IntN(8) == 0 {
		f = "!" + f
	}
	return f
}

// Typing a filter a key at a time (each key narrowing the rows the last
// one left, where it may), deleting it again, and setting it whole give
// the rows the rule gives on the cells the screen shows, on the table's
// own goroutine and in its background jobs alike.
func TestFilterSameAsFullFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	rows := backend.NewRows(mixedContainers(rng, 600), nil)
	ref := newRefFilter(rows)
	typed, jobs := filterTable(rows, false), filterTable(rows, true)
	for range 60 {
		f := randomFilter(rng, ref)
		steps := make([]string, 0, 2*len(f))
		for k := 1; k <= len(f); k++ {
			steps = append(steps, f[:k])
		}
		for k := len(f) - 1; k >= 0; k-- {
			steps = append(steps, f[:k])
		}
		for _, s := range append(steps, f) {
			want := ref.want(s)
			for _, tb := range []*table.Table{typed, jobs} {
				tb.SetFilter(s)
				if got := shownIDs(tb); !slices.Equal(got, want) {
					t.Fatalf("filter %q (typed as %q): %d rows shown, the rule gives %d\nshown: %.5q\nwant:  %.5q", s, f, len(got), len(want), got, want)
				}
			}
		}
		whole := filterTable(rows, rng.IntN(2) == 0)
		whole.SetFilter(f)
		if got, want := shownIDs(whole), ref.want(f); !slices.Equal(got, want) {
			t.Fatalf("filter %q set whole: %d rows shown, the rule gives %d", f, len(got), len(want))
		}
	}
}

// A filter reads every row's cells (a million at a time): matching them
// makes no string per row, only a few allocations per chunk of rows and
// the result. (Not a regular expression here: its matcher comes from a
// sync.Pool, which -race empties at random.)
func TestFilterAllocatesNothingPerRow(t *testing.T) {
	const n = 8192
	rows := backend.NewRows(mixedContainers(rand.New(rand.NewPCG(32, 2)), n), nil)
	tb := filterTable(rows, false)
	tb.Shown()
	for _, f := range []string{"zz-none", "!c-", "state:zz", "reason:zz", "age:zz", "mem:zz", "no match"} {
		allocs := testing.AllocsPerRun(3, func() {
			tb.SetFilter(f)
			tb.Shown()
			tb.SetFilter("")
			tb.Shown()
		})
		if allocs > 64 {
			t.Errorf("filter %q over %d rows: %.0f allocations, want at most 64 (none per row)", f, n, allocs)
		}
	}
}

var filterRows = flag.Int("filter.rows", 1000000, "the rows of BenchmarkFilterMillion")

// BenchmarkFilterMillion is one filter set on a table of 1,000,000
// mixed rows (each op a whole pass: the filter is cleared between ops,
// so nothing narrows), on the console's own goroutine as a job would run
// it:
//
//	go test -run='^$' -bench='^BenchmarkFilterMillion$' -benchtime=10x -benchmem ./tui/
//
// -filter.rows sets another number of rows: a run under valgrind's
// callgrind, which counts the instructions of a filter on a busy machine
// where its times vary by half, wants fewer.
func BenchmarkFilterMillion(b *testing.B) {
	rows := backend.NewRows(mixedContainers(rand.New(rand.NewPCG(32, 4)), *filterRows), nil)
	for _, f := range []string{"c-0", "zzz", "held", "state:held", "position 1[0-9]* in", "!team=t1", "4", "42"} {
		b.Run("filter="+f, func(b *testing.B) {
			tb := filterTable(rows, false)
			tb.Shown()
			b.ReportAllocs()
			loopWithCPU(b, func() {
				tb.SetFilter(f)
				tb.Shown()
			}, func() {
				tb.SetFilter("")
				tb.Shown()
			})
		})
	}
}

// loopWithCPU runs op in b's loop and reports the process's CPU per op
// (cpu-ms/op): on a loaded machine the wall time is the machine's, the
// CPU closer to the code's. reset, unless nil, runs between ops, untimed.
func loopWithCPU(b *testing.B, op, reset func()) {
	var cpu time.Duration
	for b.Loop() {
		c0 := cpuTime()
		op()
		cpu += cpuTime() - c0
		if reset != nil {
			b.StopTimer()
			reset()
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The containers' columns that say what bytes their text holds
// (table.Alphabets, which a filter skips by) hold no other.
func TestCellAlphabets(t *testing.T) {
	rows := backend.NewRows(mixedContainers(rand.New(rand.NewPCG(32, 3)), 3000), nil)
	for _, now := range []time.Time{fixedClock(), time.Time{}, fixedClock().Add(-30 * 24 * time.Hour)} {
		src := &ctrSource{rows: rows, now: func() time.Time { return now }}
		src.Read(func(rd table.Reader) {
			a := rd.(table.Alphabets)
			for c := range a.Columns() {
				abc := a.Alphabet(c)
				if abc == "" {
					continue
				}
				for i := range rd.Len() {
					if text := strings.ToLower(string(rd.AppendText(nil, i, c))); strings.Trim(text, abc) != "" {
						t.Fatalf("column %d of row %d is %q, outside its alphabet %q", c, i, text, abc)
					}
				}
			}
		})
	}
	var b []byte
	for _, d := range []time.Duration{-time.Hour, 0, 59 * time.Second, 59 * time.Minute, 47 * time.Hour, 1000 * 24 * time.Hour} {
		if text := string(appendAge(b[:0], d)); strings.Trim(text, ageAlphabet) != "" {
			t.Errorf("age %v is %q, outside %q", d, text, ageAlphabet)
		}
	}
}

// A filter without a space searches a STATE cell's state and its mark
// apart (ctrReader.ContainsFold): that holds while every mark begins
// with a space.
func TestStateMarkBeginsWithSpace(t *testing.T) {
	rows := backend.NewRows(mixedContainers(rand.New(rand.NewPCG(32, 5)), 3000), nil)
	marks := 0
	rows.Read(func(v backend.Slots) {
		for i := range v.Len() {
			mark := appendStateMark(nil, v.At(i))
			if len(mark) == 0 {
				continue
			}
			marks++
			if mark[0] != ' ' {
				t.Fatalf("row %d's state mark is %q: it must begin with a space", i, mark)
			}
		}
	})
	if marks == 0 {
		t.Fatal("no row has a state mark: the test reads nothing")
	}
}

// The REASON cells a reader makes share blocks (ctrReader.keep): each
// one read in a Read of thousands of rows, over many blocks, is still the
// row's cell after the Read, as a Read of that row alone makes it.
func TestReasonCellsKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 2))
	rows := backend.NewRows(mixedContainers(rng, 3000), nil)
	src := &ctrSource{rows: rows, now: fixedClock}
	var got []string
	src.Read(func(rd table.Reader) {
		for i := range rd.Len() {
			got = append(got, rd.Text(i, colReason))
		}
	})
	made := 0
	for i, s := range got {
		var want string
		src.Read(func(rd table.Reader) { want = strings.Clone(rd.Text(i, colReason)) })
		if s != want {
			t.Fatalf("row %d: REASON %q after the Read, alone %q", i, s, want)
		}
		if strings.HasPrefix(s, "exit ") || strings.HasPrefix(s, "position ") {
			made++
		}
	}
	if made*8 < cellBlock {
		t.Fatalf("%d cells made: fewer than fill one block", made)
	}
}
