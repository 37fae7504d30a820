package table

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dispatch-tui/tui/theme"
)

// TestSortOrderEqualsStableSort checks the radix (numeric) and pdqsort
// (text) orders against a stable sort of the rows by the column, in both
// directions: the same rows in the same order, ties in source order.
func TestSortOrderEqualsStableSort(t *testing.T) {
	nums := map[string][]float64{
		"small ints": {1, 5, 3, 3, 1, 0, 2, 5, 4},
		"signs":      {-1, 2.5, -0.5, 0, math.Copysign(0, -1), -1e300, 1e300, math.Inf(1), math.Inf(-1), 2.5, -1},
		"nan":        {3, math.NaN(), -2, math.NaN(), 0},
		"empty":      {},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]float64, 5000)
	for i := range random {
		random[i] = float64(rng.IntN(200)-100) * []float64{1, 0.25, 1e9}[i%3]
	}
	nums["random"] = random
	for name, vs := range nums {
		for _, col := range []int{0, 1} { // the number, then its text
			for _, desc := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/col=%d/desc=%v", name, col, desc), func(t *testing.T) {
					cols := []Column{{Title: "N", Numeric: true, SortKey: "n"}, {Title: "T", SortKey: "t"}}
					rows := make([]Row, len(vs))
					for i, v := range vs {
						rows[i] = Row{ID: fmt.Sprint("r", i), Cells: []string{"", fmt.Sprint(v)}, Nums: []float64{v, 0}}
					}
					tb := New(cols, theme.New("dark", true, true))
					tb.SetRows(rows)
					tb.SetSort(col, desc)
					tb.Shown()
					// Sorted before the rows came.
					pre := New(cols, theme.New("dark", true, true))
					pre.SetSort(col, desc)
					pre.SetRows(rows)
					pre.Shown()
					want := make([]int32, len(rows))
					for i := range want {
						want[i] = int32(i)
					}
					slices.SortStableFunc(want, func(a, b int32) int {
						var r int
						if col == 0 {
							r = cmp.Compare(rows[a].Nums[0], rows[b].Nums[0])
						} else {
							r = strings.Compare(rows[a].Cells[1], rows[b].Cells[1])
						}
						if desc {
							r = -r
						}
						return r
					})
					for _, got := range [][]int32{tb.order, pre.order} {
						if !slices.Equal(got, want) {
							t.Errorf("order %v, want %v", got[:min(20, len(got))], want[:min(20, len(want))])
						}
					}
				})
			}
		}
	}
}

// TestTypedFilterEqualsFreshFilter types filters one key at a time (each
// longer one re-filters only the rows shown) and checks every step
// against a table given that filter from scratch.
func TestTypedFilterEqualsFreshFilter(t *testing.T) {
	cols := []Column{{Title: "ID", SortKey: "i"}, {Title: "NAME", SortKey: "n"}, {Title: "PRIO", Numeric: true, SortKey: "p"}}
	rows := make([]Row, 300)
	for i := range rows {
		rows[i] = Row{ID: fmt.Sprint("c-", i), Cells: []string{fmt.Sprint("c-", i), fmt.Sprint("job-", i%37), fmt.Sprint(i % 5)},
			Nums: []float64{0, 0, float64(i % 5)}}
	}
	shown := func(tb *Table) []string {
		tb.Shown()
		var ids []string
		for _, i := range tb.view {
			ids = append(ids, tb.id(i))
		}
		return ids
	}
	steps := []string{"j", "jo", "job", "job-1", "job-12", "job-1", "job-1[2]", "job-12", "!job-12", "!job-1", "name:job-3", "name:job-33", "job-33", "c-1", "c-12", ""}
	typed := New(cols, theme.New("dark", true, true))
	typed.SetRows(rows)
	typed.SetSort(2, true)
	for k, f := range steps {
		if k == 5 {
			typed.SetRows(rows) // a refresh mid-way: the next filter starts over
		}
		typed.SetFilter(f)
		fresh := New(cols, theme.New("dark", true, true))
		fresh.SetRows(rows)
		fresh.SetSort(2, true)
		fresh.SetFilter(f)
		if got, want := shown(typed), shown(fresh); !slices.Equal(got, want) {
			t.Errorf("filter %q after %q: %d rows %v, want %d %v", f, steps[max(k-1, 0)], len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
		}
	}
}
