package table

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
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

// sortTexts orders as a stable sort by strings.Compare does, in both
// directions: texts of any bytes (a zero byte too, which the keys pad
// with), one the beginning of another, long runs alike in their first
// chunks, and as many as make it sort by radix or not.
func TestSortTextsEqualsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	prefixes := []string{"", "position ", "position 1", "c-00000000", "job-", "\x00\x00"}
	// Each text after one long prefix or none: a prefix every text
	// shares is skipped in one pass (commonPrefix).
	for _, shared := range []string{"", "etl-pipeline-customer-data-"} {
		for _, n := range []int{0, 1, 2, radixTexts - 1, radixTexts, 300, 5000} {
			sortTextsCase(t, rng, shared, prefixes, n)
		}
	}
}

func sortTextsCase(t *testing.T, rng *rand.Rand, shared string, prefixes []string, n int) {
	t.Helper()
	for _, desc := range []bool{false, true} {
		texts := make([]string, n)
		ks := make([]numKey, n)
		for i := range ks {
			b := []byte(shared + prefixes[rng.IntN(len(prefixes))])
			for range rng.IntN(20) {
				b = append(b, "\x00ab\xff9 "[rng.IntN(6)])
			}
			// Keys in an order of their own: ties keep it.
			texts[i], ks[i] = string(b), numKey{i: int32(n - 1 - i)}
		}
		want := slices.Clone(ks)
		slices.SortStableFunc(want, func(a, b numKey) int {
			if desc {
				return strings.Compare(texts[b.i], texts[a.i])
			}
			return strings.Compare(texts[a.i], texts[b.i])
		})
		sortTexts(texts, ks, make([]numKey, n), desc)
		for i := range ks {
			if ks[i].i != want[i].i {
				t.Fatalf("%d texts after %q, desc %v: at %d %q (row %d), want %q (row %d)", n, shared, desc, i, texts[ks[i].i], ks[i].i, texts[want[i].i], want[i].i)
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

// BenchmarkSortTexts sorts a million texts as the containers view's
// columns hold them (ids, names, reasons), by sortTexts and by the
// comparison sort it replaced:
//
//	go test -run='^$' -bench='^BenchmarkSortTexts$' -benchtime=5x ./tui/table/
func BenchmarkSortTexts(b *testing.B) {
	const n = 1000000
	rng := rand.New(rand.NewPCG(9, 9))
	gen := map[string]func(i int) string{
		"ids":     func(int) string { return fmt.Sprintf("c-%016x", rng.Uint64()) },
		"names":   func(i int) string { return fmt.Sprintf("job-%d", rng.IntN(n)) },
		"reasons": func(i int) string { return fmt.Sprintf("position %d in queue", 1+rng.IntN(n)) },
		"long-names": func(i int) string {
			return fmt.Sprintf("etl-pipeline-customer-data-shard-%07d", rng.IntN(n))
		},
	}
	for _, kind := range []string{"ids", "names", "reasons", "long-names"} {
		texts := make([]string, n)
		for i := range texts {
			texts[i] = gen[kind](i)
		}
		ks, tmp := make([]numKey, n), make([]numKey, n)
		b.Run(kind+"/radix", func(b *testing.B) {
			for b.Loop() {
				for i := range ks {
					ks[i] = numKey{i: int32(i)}
				}
				sortTexts(texts, ks, tmp, false)
			}
		})
		b.Run(kind+"/compare", func(b *testing.B) {
			for b.Loop() {
				for i := range ks {
					ks[i] = numKey{i: int32(i)}
				}
				slices.SortFunc(ks, func(a, b numKey) int {
					if r := strings.Compare(texts[a.i], texts[b.i]); r != 0 {
						return r
					}
					return cmp.Compare(a.i, b.i)
				})
			}
		})
	}
}

// keyMerge of two stably sorted halves orders as one stable sort of both
// does: keys alike (many here) keep a's rows before b's, halves of any
// length, one empty, the middle of the output falling inside a run of
// equal keys or not.
func TestKeyMergeEqualsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, na := range []int{0, 1, 2, 5, 17, 64} {
		for _, nb := range []int{0, 1, 3, 16, 65} {
			all := make([]numKey, na+nb)
			for i := range all {
				all[i] = numKey{uint64(rng.IntN(7)), int32(i)}
			}
			byKey := func(x, y numKey) int { return cmp.Compare(x.k, y.k) }
			a, b := slices.Clone(all[:na]), slices.Clone(all[na:])
			slices.SortStableFunc(a, byKey)
			slices.SortStableFunc(b, byKey)
			slices.SortStableFunc(all, byKey)
			want := make([]int32, len(all))
			for i, k := range all {
				want[i] = k.i
			}
			got := make([]int32, len(all))
			keyMerge(a, b, got)
			if !slices.Equal(got, want) {
				t.Errorf("%d and %d keys: merged %v, want %v", na, nb, got, want)
			}
		}
	}
}

// A text sort split between two goroutines (textOrder) gives the order
// one stable sort of the rows that are not gone gives, at sizes around
// splitMin, with rows gone anywhere (a whole half too), by a column of
// unique texts and by one of a few texts repeated.
func TestTextSortSplitEqualsStableSort(t *testing.T) {
	defer func(n int) { splitMin = n }(splitMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two parts on any machine
	splitMin = 64
	// PRIO read as text: "0", "1", "2" and a few more, mostly ties.
	cols := []Column{{Title: "ID", SortKey: "I"}, {Title: "PRIO", SortKey: "P"}}
	for _, n := range []int{splitMin - 1, splitMin, splitMin + 1, 3*splitMin + 7, 5000} {
		for _, gone := range []string{"none", "every fifth", "first half"} {
			src := newSlotRows(n)
			for i := range n {
				src.prio[i] = (i * 7919) % 7 % 4
				src.gone[i] = gone == "every fifth" && i%5 == 2 || gone == "first half" && i < n/2
			}
			for c, key := range []string{"I", "P"} {
				for _, desc := range []bool{false, true} {
					tb := New(cols, theme.New("dark", true, true))
					tb.SetSource(src)
					tb.SetSort(c, desc)
					got, want := shownIDs(tb), stableTextOrder(src, c, desc)
					if !slices.Equal(got, want) {
						t.Errorf("%d rows, gone %s, sorted by %s desc %v: %d rows%s", n, gone, key, desc, len(got), firstDiff(got, want))
					}
				}
			}
		}
	}
}

// stableTextOrder is the ids of rd's rows that are not gone in the order
// one stable sort by column c's text gives.
func stableTextOrder(rd Reader, c int, desc bool) []string {
	var live []int
	for i := range rd.Len() {
		if !rd.Gone(i) {
			live = append(live, i)
		}
	}
	slices.SortStableFunc(live, func(x, y int) int {
		if desc {
			x, y = y, x
		}
		return strings.Compare(rd.Text(x, c), rd.Text(y, c))
	})
	ids := make([]string, len(live))
	for k, i := range live {
		ids[k] = rd.ID(i)
	}
	return ids
}

// radixSort orders as a stable sort by key does, whether the keys take
// few values (fewKeys: fewMax of them or one more, spread over every
// byte) or many, with as many keys as make it try fewKeys and fewer.
func TestRadixSortEqualsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{fewMin - 1, fewMin, 3*fewMin + 5} {
		for _, values := range []int{2, 3, fewMax - 1, fewMax, fewMax + 1, 5000} {
			vals := make([]uint64, values)
			for j := range vals {
				vals[j] = rng.Uint64() >> (8 * rng.UintN(8))
			}
			vals[0] = 0
			ks := make([]numKey, n)
			for i := range ks {
				ks[i] = numKey{vals[rng.IntN(values)], int32(i)}
			}
			want := slices.Clone(ks)
			slices.SortStableFunc(want, func(a, b numKey) int { return cmp.Compare(a.k, b.k) })
			if got := radixSort(ks, make([]numKey, n)); !slices.Equal(got, want) {
				t.Errorf("%d keys of %d values: not in stable order", n, values)
			}
		}
	}
}
