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

// containsFold finds what lower-casing the ASCII letters of the text and
// searching it finds, for text of any bytes and of any length about the
// eight bytes it reads at a time, its key anywhere in the filter.
func TestContainsFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const abc = "aAbBkKiI-=09 @`[{\xc4\xb0\xe2\x84\xaa"
	lowASCII := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	for range 50000 {
		s := make([]byte, rng.IntN(40))
		for i := range s {
			s[i] = abc[rng.IntN(len(abc))]
		}
		n := make([]byte, 1+rng.IntN(5))
		for i := range n {
			for n[i] = abc[rng.IntN(len(abc))]; n[i] >= utf8.RuneSelf; {
				n[i] = abc[rng.IntN(len(abc))]
			}
		}
		if rng.IntN(2) == 0 {
			// The filter in the text, its letters in either case.
			at := rng.IntN(len(s) + 1)
			in := slices.Clone(n)
			for i, c := range in {
				if rng.IntN(2) == 0 && 'a' <= c|0x20 && c|0x20 <= 'z' {
					in[i] = c ^ 0x20
				}
			}
			s = slices.Concat(s[:at], in, s[at:])
		}
		low := lowASCII(string(n))
		want := strings.Contains(lowASCII(string(s)), low)
		if got := containsFold(string(s), newFold(low)); got != want {
			t.Fatalf("containsFold(%q, %q) = %v, want %v", s, low, got, want)
		}
	}
}
