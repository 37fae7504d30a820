// Filtering: the filter text and its matcher (substring, regexp, inverted,
// per column), and the lower-case search text rows are matched against.

package table

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

var metas = regexp.MustCompile(`[\\^$.|?*+()\[\]{}]`)

// SetFilter sets the filter: a substring (case-insensitive), or a regular
// expression when the text uses regexp syntax and compiles; a leading !
// inverts it.
func (t *Table) SetFilter(f string) {
	if f == t.filter {
		return
	}
	t.filter = f
	t.dirtyView = true
	t.matchLow = ""
	pat, inv := f, false
	if strings.HasPrefix(pat, "!") {
		pat, inv = pat[1:], true
	}
	t.invert = inv
	t.matchCol, pat = t.columnFilter(pat)
	if pat == "" {
		t.match = nil
		return
	}
	if metas.MatchString(pat) {
		if re, err := regexp.Compile("(?i)" + pat); err == nil {
			t.match = re.MatchString
			return
		}
	}
	low := strings.ToLower(pat)
	t.match = func(s string) bool { return strings.Contains(s, low) }
	t.matchLow = low
}

// FilterError says why a filter that looks like a regular expression
// (it uses regexp syntax) does not compile; SetFilter then matches it as
// text. nil when it compiles or is plain text.
func FilterError(f string) error {
	pat := strings.TrimPrefix(f, "!")
	if !metas.MatchString(pat) {
		return nil
	}
	_, err := regexp.Compile("(?i)" + pat)
	return err
}

// Filter returns the filter text.
func (t *Table) Filter() string { return t.filter }

// SearchJob returns a function that builds the search text of the current
// rows off the UI goroutine (it reads only the rows, which SetRows
// replaces and never changes, and its own copy of the texts already
// built), or nil when every row has one. Hand its result to SetSearch.
// Building them for 100,000 rows takes longer than a frame; done ahead, the
// first filter keystroke after a refresh only matches.
func (t *Table) SearchJob() func() SearchIndex {
	if !slices.Contains(t.search, "") {
		return nil
	}
	rows, search, gen := t.rows, slices.Clone(t.search), t.gen
	return func() SearchIndex {
		fillSearch(rows, search)
		return SearchIndex{gen: gen, search: search}
	}
}

// SearchIndex is the result of a SearchJob.
type SearchIndex struct {
	gen    uint32
	search []string
}

// SetSearch installs a SearchJob's result if the rows have not been
// replaced since the job was made.
func (t *Table) SetSearch(s SearchIndex) {
	if s.gen == t.gen && len(s.search) == len(t.rows) {
		t.search = s.search
	}
}

// fillSearch sets search[i] for every row whose text is "", in one
// allocation for all of them (their texts are substrings of it).
func fillSearch(rows []Row, search []string) {
	size := 0
	for i := range rows {
		if search[i] == "" {
			for _, c := range rows[i].Cells {
				size += len(c) + 1
			}
			size += len(rows[i].Hidden) + 1
		}
	}
	if size == 0 {
		return
	}
	var b strings.Builder
	b.Grow(size)
	type span struct{ row, from, to int }
	spans := make([]span, 0, len(rows))
	for i := range rows {
		if search[i] != "" {
			continue
		}
		from := b.Len()
		for _, c := range rows[i].Cells {
			writeLower(&b, c)
			b.WriteByte(' ')
		}
		writeLower(&b, rows[i].Hidden)
		b.WriteByte(' ')
		spans = append(spans, span{i, from, b.Len()})
	}
	all := b.String()
	for _, sp := range spans {
		search[sp.row] = all[sp.from:sp.to]
	}
}

// writeLower writes s in lower case; most cells have nothing to lower and
// are copied as they are.
func writeLower(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			b.WriteString(s[:i])
			b.WriteString(strings.ToLower(s[i:]))
			return
		}
	}
	b.WriteString(s)
}

// narrows reports whether the filter is plain text containing the plain
// text t.view was filtered by, on the same column and neither inverted:
// typing on in the filter then re-filters only the rows shown.
func (t *Table) narrows() bool {
	return t.matchLow != "" && !t.invert && t.viewLow != "" && t.viewCol == t.matchCol &&
		strings.Contains(t.matchLow, t.viewLow)
}

// Regexp returns the case-insensitive expression the filter's rule makes
// of pat (no ! here): pat as a regular expression when it uses regexp
// syntax and compiles, else pat as text; err says why it did not compile.
// The log search matches with it, so that both read a pattern alike.
func Regexp(pat string) (*regexp.Regexp, error) {
	if metas.MatchString(pat) {
		re, err := regexp.Compile("(?i)" + pat)
		if err == nil {
			return re, nil
		}
		return regexp.MustCompile("(?i)" + regexp.QuoteMeta(pat)), err
	}
	return regexp.MustCompile("(?i)" + regexp.QuoteMeta(pat)), nil
}
