package table

import (
	"fmt"
	"strconv"
	"testing"

	"dispatch-tui/tui/theme"

	btable "charm.land/bubbles/v2/table"
)

// BenchmarkTables puts bubbles' table and this one side by side on the
// same rows (the containers view's ten columns, 120×40 terminal) at 1k,
// 10k and 100k rows: a frame (View), a key and its frame (cursor down,
// View), and a refresh (new rows, View). Recorded in BENCHMARKS.md.
func BenchmarkTables(b *testing.B) {
	const w, h = 120, 33
	cols := []Column{
		{Title: "ID", Width: 18, SortKey: "I"}, {Title: "NAME", Width: 12, SortKey: "N"},
		{Title: "STATE", Width: 12, SortKey: "S", State: true}, {Title: "PRIO", Width: 5, Right: true, Numeric: true},
		{Title: "CPU", Width: 3, Right: true}, {Title: "MEM", Width: 6, Right: true}, {Title: "ON", Width: 12},
		{Title: "TRIES", Width: 5, Right: true}, {Title: "AGE", Width: 5, Right: true}, {Title: "REASON", Width: 12, Flex: true},
	}
	states := []string{"Queued", "Locked", "Running", "Complete", "Cancelled"}
	mkRows := func(n, gen int) ([]Row, []btable.Row) {
		ours := make([]Row, n)
		theirs := make([]btable.Row, n)
		for i := range n {
			cells := []string{fmt.Sprintf("c-%012d", i), "job-" + strconv.Itoa(i), states[i%5], strconv.Itoa(1 + i%5),
				strconv.Itoa(1 + i%4), "2G", "i-" + strconv.Itoa(i%1000), "1/3", strconv.Itoa((i+gen)%90) + "m",
				"position " + strconv.Itoa(i) + " in queue"}
			ours[i] = Row{ID: cells[0], Cells: cells, State: states[i%5], Nums: make([]float64, len(cells))}
			theirs[i] = btable.Row(cells)
		}
		return ours, theirs
	}
	bcols := make([]btable.Column, len(cols))
	for i, c := range cols {
		bcols[i] = btable.Column{Title: c.Title, Width: c.Width}
	}
	bcols[len(bcols)-1].Width = 12 + (w - 2 - 101)

	for _, n := range []int{1000, 10000, 100000} {
		ours, theirs := mkRows(n, 0)
		ours2, theirs2 := mkRows(n, 1)
		name := strconv.Itoa(n/1000) + "k"

		b.Run("ours/"+name+"/view", func(b *testing.B) {
			t := New(cols, theme.New("dark", true, false))
			t.SetSize(w, h)
			t.SetRows(ours)
			t.View()
			b.ReportAllocs()
			for b.Loop() {
				_ = t.View()
			}
		})
		b.Run("bubbles/"+name+"/view", func(b *testing.B) {
			t := btable.New(btable.WithColumns(bcols), btable.WithRows(theirs), btable.WithHeight(h), btable.WithWidth(w), btable.WithFocused(true))
			b.ReportAllocs()
			for b.Loop() {
				_ = t.View()
			}
		})
		b.Run("ours/"+name+"/key", func(b *testing.B) {
			t := New(cols, theme.New("dark", true, false))
			t.SetSize(w, h)
			t.SetRows(ours)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%200 == 199 {
					t.Home()
				}
				t.Move(1)
				_ = t.View()
			}
		})
		b.Run("bubbles/"+name+"/key", func(b *testing.B) {
			t := btable.New(btable.WithColumns(bcols), btable.WithRows(theirs), btable.WithHeight(h), btable.WithWidth(w), btable.WithFocused(true))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%200 == 199 {
					t.GotoTop()
				}
				t.MoveDown(1)
				_ = t.View()
			}
		})
		b.Run("ours/"+name+"/refresh", func(b *testing.B) {
			t := New(cols, theme.New("dark", true, false))
			t.SetSize(w, h)
			t.SetRows(ours)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					t.SetRows(ours2)
				} else {
					t.SetRows(ours)
				}
				_ = t.View()
			}
		})
		b.Run("bubbles/"+name+"/refresh", func(b *testing.B) {
			t := btable.New(btable.WithColumns(bcols), btable.WithRows(theirs), btable.WithHeight(h), btable.WithWidth(w), btable.WithFocused(true))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					t.SetRows(theirs2)
				} else {
					t.SetRows(theirs)
				}
				_ = t.View()
			}
		})
	}
}
