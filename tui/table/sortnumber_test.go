package table

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dispatch-tui/tui/theme"
)

// numberedRows is slotRows whose second column is a reason: the words
// head and tail around a place in the line where the row has one
// (Numbered), else a text of its own.
type numberedRows struct {
	*slotRows
	head, tail string
	place      []uint64
	reason     []string
}

func (s *numberedRows) Read(f func(Reader)) { f(s) }

func (s *numberedRows) Text(i, c int) string {
	switch {
	case c != 1:
		return s.slotRows.Text(i, c)
	case s.place[i] > 0:
		return s.head + strconv.FormatUint(s.place[i], 10) + s.tail
	}
	return s.reason[i]
}

func (s *numberedRows) AppendText(dst []byte, i, c int) []byte {
	return append(dst, s.Text(i, c)...)
}

func (s *numberedRows) NumberWords(c int) (string, string, bool) { return s.head, s.tail, c == 1 }

func (s *numberedRows) Number(i, c int) uint64 {
	if c != 1 {
		return 0
	}
	return s.place[i]
}

// A sort by a column whose texts are mostly the same words around a
// number (Numbered) and a few texts shared between rows (textSet) gives
// the order one stable sort of every row's text gives: whatever the
// tail's first byte (before digits, after them, none, a digit), with
// the same text at other addresses, with more than a few texts in one
// part only or in both, with a text of a row's own that begins with the
// words (one that is a numbered text too, and a number too long to
// key), with every other text behind one long prefix, with rows gone, in
// one part and in two.
func TestNumberedTextSortEqualsStableSort(t *testing.T) {
	defer func(n int) { splitMin = n }(splitMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	splitMin = 64
	shared := []string{"", "at quota", "pos", "position", "positio", "q", "held", "exit 0", "Position 3", "position!"}
	rng := rand.New(rand.NewPCG(32, 17))
	cols := []Column{{Title: "ID", SortKey: "I"}, {Title: "REASON", SortKey: "R"}}
	for _, tail := range []string{" in queue", "", "x", "5 left"} {
		for _, mix := range []string{"shared", "copies", "unique in the second half", "unique", "clash", "too long", "one long prefix", "all numbered"} {
			for _, n := range []int{splitMin - 1, 3*splitMin + 7, 3000} {
				src := &numberedRows{slotRows: newSlotRows(n), head: "position ", tail: tail,
					place: make([]uint64, n), reason: make([]string, n)}
				for i := range n {
					src.gone[i] = i%7 == 3
					switch k := rng.IntN(10); {
					case k < 6, mix == "all numbered":
						src.place[i] = 1 + rng.Uint64N(uint64(2*n)) // some twice
					case mix == "copies" && k == 6:
						src.reason[i] = strings.Clone(shared[rng.IntN(len(shared))])
					case mix == "unique" && k < 8, mix == "unique in the second half" && k < 8 && i > n/2:
						src.reason[i] = fmt.Sprint("reason ", rng.IntN(1e6))
					case mix == "one long prefix":
						// Every text read alike in its first chunks
						// (sharedChunks), one the prefix alone.
						src.reason[i] = "etl-pipeline-customer-" + fmt.Sprintf("%06d", rng.IntN(1e6))[:rng.IntN(3)+3]
						if i == n/2+1 {
							src.reason[i] = "etl-pipeline-customer-"
						}
					default:
						src.reason[i] = shared[rng.IntN(len(shared))]
					}
				}
				src.place[n-5] = maxDecimal - 1
				switch mix {
				case "clash":
					src.place[n-2], src.reason[n-2] = 0, "position 12"+tail
					src.place[n-1], src.reason[n-1] = 0, "position x"
				case "too long":
					src.place[n/3] = maxDecimal
				}
				for _, desc := range []bool{false, true} {
					tb := New(cols, theme.New("dark", true, true))
					tb.SetSource(src)
					tb.SetSort(1, desc)
					got, want := shownIDs(tb), stableTextOrder(src, 1, desc)
					if !slices.Equal(got, want) {
						t.Errorf("tail %q, %s, %d rows, desc %v: %d rows%s", tail, mix, n, desc, len(got), firstDiff(got, want))
					}
				}
			}
		}
	}
}

// decimalKey orders numbers as their texts before a tail do: a space
// (before digits) or none, or a letter (after them).
func TestDecimalKeyOrdersAsText(t *testing.T) {
	nums := []uint64{1, 2, 9, 10, 11, 19, 20, 99, 100, 101, 123, 1000, 99999, 100000, 987654321, maxDecimal - 1}
	for _, tail := range []string{" in queue", "", "x"} {
		nb := numbering{on: true, end: endBefore}
		if tail == "x" {
			nb.end = endAfter
		}
		for _, desc := range []bool{false, true} {
			for _, a := range nums {
				for _, b := range nums {
					ta, tb := strconv.FormatUint(a, 10)+tail, strconv.FormatUint(b, 10)+tail
					want := strings.Compare(ta, tb)
					if desc {
						want = -want
					}
					ka, kb := decimalKey(a, nb.end, desc), decimalKey(b, nb.end, desc)
					if got := cmpKeys(ka, kb); got != want {
						t.Errorf("tail %q desc %v: %d vs %d compares %d, their texts %d", tail, desc, a, b, got, want)
					}
				}
			}
		}
	}
}

func cmpKeys(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
