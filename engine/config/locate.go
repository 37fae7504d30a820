// The line of each key: a scan of the config's text, the one pass besides the decode.

package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML decoder keeps the positions of keys to itself, so the locator
// finds the line of each key by scanning the source text: the one pass
// over the file besides the decode. It only ever runs on text the decoder
// has already accepted, so it can be lenient about syntax; it must merely
// never loop forever or panic, whatever the input.
//
// Keys are named by indexed paths, one definition each, as errors name
// them: "instance_type[1].ram", "cloud.sshhosts.host[0].address",
// "tui.keys.hold".

type locator struct {
	lineStarts []int          // byte offset where each line starts
	byPath     map[string]int // indexed path → line of its first definition
	arrays     map[string]int // indexed path of an array of tables → element count
}

// line returns the line of the first definition of the indexed path key,
// or of its nearest defined ancestor; 0 if neither is in the document.
func (l *locator) line(key string) int {
	for key != "" {
		if n, ok := l.byPath[key]; ok {
			return n
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// lineAt converts a byte offset into a 1-based line number.
func (l *locator) lineAt(off int) int {
	return sort.Search(len(l.lineStarts), func(i int) bool { return l.lineStarts[i] > off })
}

// seg is one piece of an indexed path: a key and, for an element of an
// array of tables, its index.
type seg struct {
	name string
	idx  int // -1: not an array element
}

func indexedPath(segs []seg) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(toml.Key{s.name}.String())
		if s.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// record notes that segs appears on line: a key/value, a table header, a
// key inside an inline table, or the "a" of a dotted key "a.b = 1". The
// first appearance counts.
func (l *locator) record(segs []seg, line int) {
	ip := indexedPath(segs)
	if _, ok := l.byPath[ip]; !ok {
		l.byPath[ip] = line
	}
}

// resolve turns the names of a header or dotted key, relative to base, into
// segments, pointing every name that is an array of tables at its last
// element (that is what TOML's [a.b] after [[a]] refers to).
func (l *locator) resolve(base []seg, names []string) []seg {
	segs := append([]seg(nil), base...)
	for _, n := range names {
		segs = append(segs, seg{name: n, idx: -1})
		if c := l.arrays[indexedPath(segs)]; c > 0 {
			segs[len(segs)-1].idx = c - 1
		}
	}
	return segs
}

// scanner walks TOML source text, feeding a locator.
type scanner struct {
	s   string
	i   int
	loc *locator
}

// locate scans src and returns its key → line index.
func locate(src string) *locator {
	l := &locator{
		lineStarts: []int{0},
		byPath:     map[string]int{},
		arrays:     map[string]int{},
	}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			l.lineStarts = append(l.lineStarts, i+1)
		}
	}
	sc := &scanner{s: src, loc: l}
	sc.run()
	return l
}

func (sc *scanner) eof() bool  { return sc.i >= len(sc.s) }
func (sc *scanner) line() int  { return sc.loc.lineAt(sc.i) }
func (sc *scanner) peek() byte { return sc.s[sc.i] }

// skipBlank skips spaces and tabs.
func (sc *scanner) skipBlank() {
	for !sc.eof() && (sc.peek() == ' ' || sc.peek() == '\t') {
		sc.i++
	}
}

// skipSpace skips whitespace, newlines and comments.
func (sc *scanner) skipSpace() {
	for !sc.eof() {
		switch sc.peek() {
		case ' ', '\t', '\r', '\n':
			sc.i++
		case '#':
			sc.skipLine()
		default:
			return
		}
	}
}

// skipLine moves past the end of the current line.
func (sc *scanner) skipLine() {
	if j := strings.IndexByte(sc.s[sc.i:], '\n'); j >= 0 {
		sc.i += j + 1
	} else {
		sc.i = len(sc.s)
	}
}

func (sc *scanner) run() {
	if strings.HasPrefix(sc.s, "\ufeff") {
		sc.i = len("\ufeff")
	}
	var table []seg // the current [table] or [[array]] element
	for {
		sc.skipSpace()
		if sc.eof() {
			return
		}
		start := sc.i
		line := sc.line()
		switch {
		case strings.HasPrefix(sc.s[sc.i:], "[["):
			sc.i += 2
			names := sc.keyNames()
			if len(names) > 0 {
				segs := sc.loc.resolve(nil, names[:len(names)-1])
				segs = append(segs, seg{name: names[len(names)-1], idx: -1})
				whole := indexedPath(segs)
				n := sc.loc.arrays[whole]
				sc.loc.arrays[whole] = n + 1
				sc.loc.record(segs, line)
				segs[len(segs)-1].idx = n
				sc.loc.record(segs, line)
				table = segs
			}
			sc.skipLine()
		case sc.peek() == '[':
			sc.i++
			names := sc.keyNames()
			if len(names) > 0 {
				table = sc.loc.resolve(nil, names)
				sc.loc.record(table, line)
			}
			sc.skipLine()
		default:
			sc.keyValue(table)
			sc.skipLine()
		}
		if sc.i == start {
			sc.i++
		}
	}
}

// keyValue scans "key = value" relative to base.
func (sc *scanner) keyValue(base []seg) {
	line := sc.line()
	names := sc.keyNames()
	if len(names) == 0 {
		return
	}
	sc.skipBlank()
	if sc.eof() || sc.peek() != '=' {
		return
	}
	sc.i++
	segs := append([]seg(nil), base...)
	for i, n := range names {
		segs = append(segs, seg{name: n, idx: -1})
		if i < len(names)-1 {
			sc.loc.record(segs, line)
		}
	}
	sc.loc.record(segs, line)
	sc.value(segs)
}

// keyNames scans a possibly dotted, possibly quoted key and returns its
// pieces. It returns nil if there is no key at the current position.
func (sc *scanner) keyNames() []string {
	var names []string
	for {
		sc.skipBlank()
		if sc.eof() {
			return names
		}
		switch c := sc.peek(); {
		case c == '"':
			start := sc.i
			sc.basicString()
			raw := sc.s[start:sc.i]
			if u, err := strconv.Unquote(raw); err == nil {
				names = append(names, u)
			} else {
				names = append(names, strings.Trim(raw, `"`))
			}
		case c == '\'':
			start := sc.i
			sc.literalString()
			names = append(names, strings.Trim(sc.s[start:sc.i], "'"))
		case isBareKeyChar(c):
			start := sc.i
			for !sc.eof() && isBareKeyChar(sc.peek()) {
				sc.i++
			}
			names = append(names, sc.s[start:sc.i])
		default:
			return names
		}
		sc.skipBlank()
		if sc.eof() || sc.peek() != '.' {
			return names
		}
		sc.i++
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value scans one value whose key is segs, recording the keys of inline
// tables (also inside arrays, where elements get an index).
func (sc *scanner) value(segs []seg) {
	sc.skipBlank()
	if sc.eof() {
		return
	}
	switch c := sc.peek(); {
	case strings.HasPrefix(sc.s[sc.i:], `"""`):
		sc.multiString(`"""`, true)
	case c == '"':
		sc.basicString()
	case strings.HasPrefix(sc.s[sc.i:], `'''`):
		sc.multiString(`'''`, false)
	case c == '\'':
		sc.literalString()
	case c == '[':
		n := 0
		sc.items(']', func() {
			elem := append([]seg(nil), segs...)
			elem[len(elem)-1].idx = n
			if segs[len(segs)-1].idx >= 0 {
				// An array nested in an array: no path syntax for it;
				// keep the outer index, which is good enough for lines.
				elem[len(elem)-1].idx = segs[len(segs)-1].idx
			}
			sc.value(elem)
			n++
		})
	case c == '{':
		sc.items('}', func() { sc.keyValue(segs) })
	default:
		sc.scalar()
	}
}

// items scans the comma-separated items of an array or inline table, sc.i
// at its opening bracket, to its closing one (or the end of the file),
// calling item at the start of each; an item that scans nothing is
// stepped over, so a malformed one cannot stop the scan.
func (sc *scanner) items(closing byte, item func()) {
	sc.i++
	for {
		sc.skipSpace()
		if sc.eof() {
			return
		}
		switch sc.peek() {
		case closing:
			sc.i++
			return
		case ',':
			sc.i++
			continue
		}
		start := sc.i
		item()
		if sc.i == start {
			sc.i++
		}
	}
}

// scalar scans a number, boolean or date-time.
func (sc *scanner) scalar() {
	start := sc.i
	for !sc.eof() {
		switch sc.peek() {
		case ' ':
			// "1979-05-27 07:32:00": a date and a time separated by a space.
			if sc.i-start == 10 && sc.s[start+4] == '-' && sc.i+1 < len(sc.s) &&
				sc.s[sc.i+1] >= '0' && sc.s[sc.i+1] <= '9' {
				sc.i++
				continue
			}
			return
		case '\t', '\r', '\n', ',', ']', '}', '#':
			return
		}
		sc.i++
	}
}

// basicString scans "..." with backslash escapes.
func (sc *scanner) basicString() {
	sc.i++ // opening quote
	for !sc.eof() {
		switch sc.peek() {
		case '\\':
			sc.i += 2
		case '"':
			sc.i++
			return
		case '\n':
			return
		default:
			sc.i++
		}
	}
	if sc.i > len(sc.s) {
		sc.i = len(sc.s)
	}
}

// literalString scans '...'.
func (sc *scanner) literalString() {
	sc.i++
	for !sc.eof() {
		switch sc.peek() {
		case '\'':
			sc.i++
			return
		case '\n':
			return
		}
		sc.i++
	}
}

// multiString scans a multi-line string, basic or literal, that delim
// (three double or three single quotes) opens and closes. Up to two extra quotes
// right before the closing delimiter belong to the content.
func (sc *scanner) multiString(delim string, escapes bool) {
	sc.i += 3
	for !sc.eof() {
		if escapes && sc.peek() == '\\' {
			sc.i += 2
			continue
		}
		if strings.HasPrefix(sc.s[sc.i:], delim) {
			sc.i += 3
			for k := 0; k < 2 && !sc.eof() && sc.peek() == delim[0]; k++ {
				sc.i++
			}
			return
		}
		sc.i++
	}
	if sc.i > len(sc.s) {
		sc.i = len(sc.s)
	}
}
