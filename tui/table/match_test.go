package table

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"dispatch-tui/tui/theme"
)

// A filter split between goroutines keeps the rows one pass keeps, in
// the same order, sorted or not, whether the pattern is matched by cell
// or on the whole row.
func TestFilterSplitSameAsOnePass(t *testing.T) {
	src := newSlotRows(5000)
	for i := range src.prio {
		src.prio[i] = (i * 7919) % 13
	}
	cols := []Column{{Title: "ID", SortKey: "I"}, {Title: "PRIO", SortKey: "P", Numeric: true}}
	defer func(n int) { splitMin = n }(splitMin)
	filters := []string{"c-1", "C-12", "!c-4", "prio:1", "12", "c-1 1", "^c-[0-9]*7$", "zzz", "c-(", ""}
	for _, sorted := range []bool{false, true} {
		table := func() *Table {
			tb := New(cols, theme.New("dark", true, true))
			tb.SetAsync(1)
			tb.SetSource(src)
			if sorted {
				tb.SortBy("P")
			}
			return tb
		}
		one, split := table(), table()
		for _, f := range filters {
			one.SetFilter(f)
			settle(one)
			want := shownIDs(one)
			splitMin = 256
			split.SetFilter(f)
			settle(split)
			got := shownIDs(split)
			splitMin = 1 << 30
			if !slices.Equal(got, want) {
				t.Errorf("sorted %v, filter %q split: %d rows, one pass %d%s", sorted, f, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("; row %d is %s, want %s", i, a[i], b[i])
		}
	}
	return ""
}

// The letters outside ASCII that lower to ASCII are those foldsToASCII
// names: a filter's search without case checks for them.
func TestFoldsToASCII(t *testing.T) {
	var got []byte
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < utf8.RuneSelf && !slices.Contains(got, byte(l)) {
			got = append(got, byte(l))
		}
	}
	slices.Sort(got)
	if string(got) != foldsToASCII {
		t.Errorf("letters outside ASCII lower to %q, foldsToASCII is %q", got, foldsToASCII)
	}
}

// containsFold finds what lower-casing the text and searching it finds,
// for text of ASCII.
func TestContainsFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const abc = "aAbBkKiI-=09 "
	for range 20000 {
		s := make([]byte, rng.IntN(12))
		for i := range s {
			s[i] = abc[rng.IntN(len(abc))]
		}
		n := make([]byte, 1+rng.IntN(3))
		for i := range n {
			n[i] = abc[rng.IntN(len(abc))]
		}
		low := strings.ToLower(string(n))
		want := strings.Contains(strings.ToLower(string(s)), low)
		if got := containsFold(s, low); got != want {
			t.Fatalf("containsFold(%q, %q) = %v, want %v", s, low, got, want)
		}
	}
}
