package table

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"dispatch-tui/tui/theme"
)

func asyncCols() []Column {
	return []Column{{Title: "ID", SortKey: "I"}, {Title: "NAME", SortKey: "N"}, {Title: "PRIO", Numeric: true, SortKey: "P"}}
}

func asyncRows(n, seed int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{ID: fmt.Sprint("c-", i), Cells: []string{fmt.Sprint("c-", i), fmt.Sprint("job-", (i*seed)%37), fmt.Sprint((i + seed) % 5)},
			Nums: []float64{0, 0, float64((i + seed) % 5)}}
	}
	return rows
}

func shownIDs(tb *Table) []string {
	tb.ensure()
	ids := make([]string, 0, len(tb.view))
	for _, i := range tb.view {
		ids = append(ids, tb.id(i))
	}
	return ids
}

// settle runs the table's job, if any, as the console does off the UI
// goroutine, and applies its result.
func settle(tb *Table) {
	if job := tb.OrderJob(); job != nil {
		tb.SetOrder(job())
	}
}

// A table sorting and filtering in the background shows, once each
// result is applied, what a table doing it at once shows, with the cursor
// on the same row; also when keys come faster than results (only every
// few keys' job is run: the others are superseded) and across refreshes.
func TestAsyncEqualsSync(t *testing.T) {
	steps := []string{"sort:P", "j", "filter:job-1", "sort:P", "filter:job-12", "refresh", "filter:job-1", "sort:N",
		"j", "j", "filter:!job-3", "sort:I", "refresh", "filter:name:job-2", "filter:job-2[0-9]", "sort:P", "filter:", "j"}
	for _, every := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("job every ", every, " steps"), func(t *testing.T) {
			now := New(asyncCols(), theme.New("dark", true, true))
			bg := New(asyncCols(), theme.New("dark", true, true))
			bg.SetAsync(1)
			seed := 1
			var jobs []func() OrderResult
			for _, tb := range []*Table{now, bg} {
				tb.SetSize(80, 10)
				tb.SetRows(asyncRows(500, seed))
			}
			movedBusy := false
			for k, s := range steps {
				movedBusy = movedBusy || s == "j" && bg.Busy() != ""
				for _, tb := range []*Table{now, bg} {
					switch {
					case s == "j":
						tb.Move(7)
					case s == "refresh":
						tb.SetRows(asyncRows(500, seed+1))
					case s[:5] == "sort:":
						tb.SortBy(s[5:])
					default:
						tb.SetFilter(s[7:])
					}
				}
				if s == "refresh" {
					seed++
				}
				if job := bg.OrderJob(); job != nil {
					jobs = append(jobs, job)
				}
				if k%every != every-1 && k != len(steps)-1 {
					continue // the jobs run later, all but the last superseded
				}
				// Results delivered newest first: the older ones
				// arrive stale.
				for j := len(jobs) - 1; j >= 0; j-- {
					bg.SetOrder(jobs[j]())
				}
				jobs = jobs[:0]
				if busy := bg.Busy(); busy != "" {
					t.Fatalf("step %d %q: still %s after its job", k, s, busy)
				}
				if got, want := shownIDs(bg), shownIDs(now); !slices.Equal(got, want) {
					t.Errorf("step %d %q: shown %v, want %v", k, s, got[:min(8, len(got))], want[:min(8, len(want))])
				}
				if movedBusy {
					// It moved over the rows shown then, the
					// previous ones: another row than in now.
					now.SetCursor(bg.Cursor())
					movedBusy = false
				}
				if got, want := bg.Cursor(), now.Cursor(); got != want {
					t.Errorf("step %d %q: cursor on %q, want %q", k, s, got, want)
				}
			}
		})
	}
}

// A result superseded by a newer key or a refresh is dropped (and the
// job, when it runs after being superseded, stops early); the latest
// key's result is applied whatever the order results arrive in.
func TestAsyncSuperseded(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run: which jobs are run after both are made (the other ran
		// before the second was made, so it completed).
		firstBeforeSecond bool
		deliverFirstLast  bool
		refresh           bool // a refresh instead of the second key
	}{
		{"stopped, delivered first", false, false, false},
		{"completed, delivered first", true, false, false},
		{"completed, delivered after the latest", true, true, false},
		{"stopped, delivered after the latest", false, true, false},
		{"refresh supersedes", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := New(asyncCols(), theme.New("dark", true, true))
			tb.SetAsync(1)
			tb.SetSize(80, 10)
			tb.SetRows(asyncRows(200, 1))
			before := shownIDs(tb)
			tb.SortBy("P")
			job1 := tb.OrderJob()
			if job1 == nil || tb.Busy() != "sorting" {
				t.Fatalf("no job, busy %q", tb.Busy())
			}
			if tb.OrderJob() != nil {
				t.Fatal("a second job for the same key")
			}
			if got := shownIDs(tb); !slices.Equal(got, before) {
				t.Fatalf("rows changed before the result: %v", got[:5])
			}
			var r1 OrderResult
			if tc.firstBeforeSecond {
				r1 = job1()
			}
			if tc.refresh {
				tb.SetRows(asyncRows(200, 1))
				if b := tb.Busy(); b != "" {
					t.Fatalf("busy %q after a refresh", b)
				}
				want := shownIDs(tb)
				tb.SetOrder(r1)
				if got := shownIDs(tb); !slices.Equal(got, want) {
					t.Errorf("a result from before the refresh was applied")
				}
				return
			}
			tb.SortBy("P") // descending now
			job2 := tb.OrderJob()
			if !tc.firstBeforeSecond {
				r1 = job1()
				if !r1.r.stopped {
					t.Error("the superseded job did not stop")
				}
			}
			r2 := job2()
			if !tc.deliverFirstLast {
				tb.SetOrder(r1)
				if tb.Busy() != "sorting" || !slices.Equal(shownIDs(tb), before) {
					t.Fatalf("superseded result applied (busy %q)", tb.Busy())
				}
			}
			tb.SetOrder(r2)
			if tc.deliverFirstLast {
				tb.SetOrder(r1)
			}
			if tb.Busy() != "" {
				t.Fatalf("busy %q after the latest result", tb.Busy())
			}
			want := New(asyncCols(), theme.New("dark", true, true))
			want.SetRows(asyncRows(200, 1))
			want.SetSort(2, true)
			if got, w := shownIDs(tb), shownIDs(want); !slices.Equal(got, w) {
				t.Errorf("shown %v, want the descending sort %v", got[:5], w[:5])
			}
		})
	}
}

// The cursor stays on its row while the previous rows are shown, and
// when the result lands it is still on that row, wherever it moved; a
// row the filter hides leaves the cursor at its position.
func TestAsyncCursorStaysOnRow(t *testing.T) {
	tb := New(asyncCols(), theme.New("dark", true, true))
	tb.SetAsync(1)
	tb.SetSize(80, 10)
	tb.SetRows(asyncRows(200, 1))
	tb.SetCursor("c-57")
	tb.SortBy("P")
	tb.OrderJob()
	tb.SortBy("P")
	job := tb.OrderJob()
	if tb.Cursor() != "c-57" || tb.cursorPos != 57 {
		t.Fatalf("cursor %q at %d while sorting", tb.Cursor(), tb.cursorPos)
	}
	tb.SetOrder(job())
	if got := tb.Cursor(); got != "c-57" || tb.id(tb.view[tb.cursorPos]) != "c-57" {
		t.Fatalf("cursor on %q after the sort", got)
	}
	if tb.cursorPos < tb.top || tb.cursorPos >= tb.top+tb.page() {
		t.Errorf("cursor row at %d not on the page from %d", tb.cursorPos, tb.top)
	}
	pos := tb.cursorPos
	tb.SetFilter("job-99") // matches nothing
	settle(tb)
	tb.SetFilter("")
	settle(tb)
	if tb.Cursor() != "c-57" {
		t.Errorf("cursor on %q after an empty filter was cleared", tb.Cursor())
	}
	tb.SetFilter("!c-57")
	settle(tb)
	if tb.cursorPos != min(pos, tb.Shown()-1) {
		t.Errorf("cursor at %d after its row was filtered out, want %d", tb.cursorPos, pos)
	}
}

// Jobs run on other goroutines while the table takes keys and refreshes
// (run with -race); when the keys stop, the latest result shows the
// table as asked.
func TestAsyncJobsConcurrent(t *testing.T) {
	tb := New(asyncCols(), theme.New("dark", true, true))
	tb.SetAsync(1)
	tb.SetSize(80, 10)
	tb.SetRows(asyncRows(20000, 1))
	results := make(chan OrderResult, 64)
	running := 0
	rng := rand.New(rand.NewPCG(3, 4))
	filters := []string{"", "job-1", "job-12", "job-1[0-9]", "!job-2", "c-1"}
	seed := 1
	for k := range 60 {
		switch rng.IntN(4) {
		case 0:
			tb.SortBy([]string{"P", "N", "I"}[rng.IntN(3)])
		case 1:
			tb.SetFilter(filters[rng.IntN(len(filters))])
		case 2:
			if k%10 == 0 {
				seed++
				tb.SetRows(asyncRows(20000, seed))
			}
		default:
			tb.Move(rng.IntN(100))
		}
		if job := tb.OrderJob(); job != nil {
			running++
			go func() { results <- job() }()
		}
		tb.View()
		select {
		case r := <-results:
			running--
			tb.SetOrder(r)
		default:
		}
	}
	for ; running > 0; running-- {
		tb.SetOrder(<-results)
	}
	if b := tb.Busy(); b != "" {
		t.Fatalf("still %s with every job done", b)
	}
	want := New(asyncCols(), theme.New("dark", true, true))
	want.SetRows(asyncRows(20000, seed))
	c, d := tb.Sort()
	want.SetSort(c, d)
	want.SetFilter(tb.Filter())
	if got, w := shownIDs(tb), shownIDs(want); !slices.Equal(got, w) {
		t.Errorf("shown %d rows %v, want %d %v", len(got), got[:min(5, len(got))], len(w), w[:min(5, len(w))])
	}
}
