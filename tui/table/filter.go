// Filtering: the filter text and its matcher (substring, regexp, inverted,
// per column), and the lower-case search text each row is matched by.

package table

import (
	"bytes"
	"regexp"
	"strings"
	"unicode"
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
			t.match = re.Match
			return
		}
	}
	low := strings.ToLower(pat)
	lowb := []byte(low)
	t.match = func(s []byte) bool { return bytes.Contains(s, lowb) }
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

// lower lower-cases b as bytes.ToLower would: in place while it is
// ASCII; text with other letters is lowered into *spare, which is kept
// for the next row (a filter lowers a million rows' text, and a failed
// container's state has a "✗").
func lower(b []byte, spare *[]byte) []byte {
	for i, c := range b {
		if c >= utf8.RuneSelf {
			out := append((*spare)[:0], b[:i]...)
			for j := i; j < len(b); {
				r, w := rune(b[j]), 1
				if r >= utf8.RuneSelf {
					r, w = utf8.DecodeRune(b[j:])
				}
				out = utf8.AppendRune(out, unicode.ToLower(r))
				j += w
			}
			*spare = out
			return out
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
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
