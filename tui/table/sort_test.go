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
					if !slices.Equal(tb.order, want) {
						t.Errorf("order %v, want %v", tb.order[:min(20, len(want))], want[:min(20, len(want))])
					}
				})
			}
		}
	}
}
