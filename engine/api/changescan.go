// Reading a containers changes page in one pass of our own: the page's
// body checked and cut into its members, each item handed to readItem in
// place, with encoding/json behind it for any page it does not expect.

package api

import (
	"encoding/json"
	"io"
	"math"
	"strings"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// json.Decoder scanned each item of a page twice, once to find its end
// and once to copy it out as a RawMessage: most of an attached console's
// decoding under the churn (BENCHMARKS.md, "The store's pages during a
// fold"). A page is read whole into a kept buffer instead, checked as
// JSON and cut into items by pageScanner, and each item read where it
// lies. What it reads is what json.Unmarshal reads into a changesJSON
// (TestChangesPageAsUnmarshal, FuzzChangesPage); a page it does not
// expect (a member's name in another case or escaped, a member twice) is
// read by json.Unmarshal whole.

// changesJSON is a changes page as encoding/json reads it for a console:
// ChangesBody's members, the items as views (an item's cost is the
// list's, not a console's).
type changesJSON struct {
	ChangesBody
	Items []view.Container `json:"items"` // hides ChangesBody.Items
}

// pageBuf is the memory one read of a page reuses: its body and its
// items' bounds. A page is at most the limit asked: a console asks 2,500
// (pageSize in tui/backend), about 1.5 MB of body at the acceptance's
// items (~600 bytes each), and 20 KB of bounds.
type pageBuf struct {
	body  []byte
	items []int32 // start and end (exclusive) of each item in body
}

// pageBufKeep is the largest body kept for the next read: a page far
// over it (a first read asking 10,000 large items) is let go.
const pageBufKeep = 8 << 20

// readBufs keeps the buffers of the last reads for the next ones: at
// most two (a console's containers and instances read at once), so at
// most 2 × pageBufKeep held, about 2 × 2 MiB at a console's pages. Not a
// sync.Pool: a console collects several times a page under the churn,
// and a pool emptied by two collections had each page's buffer grown
// anew (BENCHMARKS.md, helper decode).
var readBufs = make(chan *pageBuf, 2)

// getReadBuf returns a kept buffer, or a new one.
func getReadBuf() *pageBuf {
	select {
	case p := <-readBufs:
		return p
	default:
		return &pageBuf{body: make([]byte, 0, 64<<10)}
	}
}

// readAll reads r to its end into p.body.
func (p *pageBuf) readAll(r io.Reader) error {
	b := p.body[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			p.body = b
			return nil
		}
		if err != nil {
			p.body = b
			return err
		}
	}
}

// put gives p back for the next read.
func (p *pageBuf) put() {
	if cap(p.body) > pageBufKeep {
		return
	}
	p.body, p.items = p.body[:0], p.items[:0]
	select {
	case readBufs <- p:
	default: // two kept already
	}
}

// decodeChangesPage reads body, a containers changes page, handing its
// items to each in order (into one reused view.Container) and returning
// the rest. A page that is not JSON is an error before any item is
// handed over; an item that is JSON but not a container (a string for a
// number) is an error when it is met, after the items before it: the
// caller drops what it was handed on an error.
//
// With pairs set, each view's labels and constraints are in pairs when it
// is handed over, not in maps (queue.ReadViewPairs).
func decodeChangesPage(p *pageBuf, pairs *queue.Pairs, each func(*view.Container)) (ChangesBody, error) {
	s := pageScanner{b: p.body, items: p.items[:0]}
	body, ok := s.page()
	p.items = s.items
	if !ok {
		return decodeChangesSlow(p.body, pairs, each)
	}
	var c view.Container
	for k := 0; k < len(s.items); k += 2 {
		c = view.Container{}
		if err := readItem(p.body[s.items[k]:s.items[k+1]], &c, pairs); err != nil {
			return body, err
		}
		each(&c)
	}
	return body, nil
}

// decodeChangesSlow reads a page pageScanner did not take with
// encoding/json, whole, before handing any item over.
func decodeChangesSlow(data []byte, pairs *queue.Pairs, each func(*view.Container)) (ChangesBody, error) {
	var page changesJSON
	if err := json.Unmarshal(data, &page); err != nil {
		return ChangesBody{}, err
	}
	for i := range page.Items {
		if pairs != nil {
			pairs.TakeMaps(&page.Items[i])
		}
		each(&page.Items[i])
	}
	return page.ChangesBody, nil
}

// pageScanner checks a page's body as JSON and reads it: the items'
// bounds into items, the other members as json.Unmarshal would read them
// into a ChangesBody. ok false: not a page it reads (not JSON, or a
// member it leaves to encoding/json).
type pageScanner struct {
	b     []byte
	i     int
	items []int32
	depth int
}

// maxDepth is encoding/json's limit of nesting; deeper is its error.
const maxDepth = 10000

// Member names of a changes page, as ChangesBody's tags name them.
const (
	removedKey    = "removed"
	generationKey = "generation"
	moreKey       = "more"
	latestKey     = "latest"
	availableKey  = "items_available"
)

// page reads the whole body.
func (s *pageScanner) page() (body ChangesBody, ok bool) {
	if len(s.b) > 1<<31-1 {
		return body, false // items' bounds are int32
	}
	var seen [len(memberNames)]bool
	s.ws()
	if !s.byte('{') {
		return body, false
	}
	s.depth = 1 // as encoding/json counts: the page's object is the first
	s.ws()
	if s.byte('}') {
		return body, s.end()
	}
	for {
		key, ok := s.key()
		if !ok {
			return body, false
		}
		s.ws()
		k := memberIndex(key)
		if k < 0 {
			// encoding/json matches names without regard to case.
			if memberFolded(key) {
				return body, false
			}
			if !s.value() {
				return body, false
			}
		} else {
			if seen[k] {
				return body, false // the last would win: encoding/json's
			}
			seen[k] = true
			if !s.member(k, &body) {
				return body, false
			}
		}
		s.ws()
		if s.byte('}') {
			return body, s.end()
		}
		if !s.byte(',') {
			return body, false
		}
		s.ws()
	}
}

var memberNames = [...]string{itemsKey, removedKey, generationKey, moreKey, latestKey, availableKey}

func memberIndex(key []byte) int {
	for k, name := range memberNames {
		if string(key) == name {
			return k
		}
	}
	return -1
}

// memberFolded reports whether key names a member in another case (or
// with the Kelvin sign or long s, which encoding/json folds too).
func memberFolded(key []byte) bool {
	for _, name := range memberNames {
		if strings.EqualFold(string(key), name) {
			return true
		}
	}
	for _, c := range key {
		if c >= 0x80 {
			return true // folding beyond ASCII: encoding/json's to judge
		}
	}
	return false
}

// member reads the value of member k into body.
func (s *pageScanner) member(k int, body *ChangesBody) bool {
	start := s.i
	switch memberNames[k] {
	case itemsKey:
		return s.itemList()
	case removedKey:
		return s.removed(&body.Removed)
	}
	if !s.value() {
		return false
	}
	raw := s.b[start:s.i]
	switch memberNames[k] {
	case generationKey:
		return readUint(raw, &body.Generation)
	case latestKey:
		return readUint(raw, &body.Latest)
	case moreKey:
		switch string(raw) {
		case "true":
			body.More = true
			return true
		case "false":
			body.More = false
			return true
		}
		return json.Unmarshal(raw, &body.More) == nil
	case availableKey:
		var u uint64
		if readUint(raw, &u) && u <= math.MaxInt && raw[0] != 'n' {
			body.ItemsAvailable = int(u)
			return true
		}
		return json.Unmarshal(raw, &body.ItemsAvailable) == nil
	}
	return false
}

// readUint reads raw, a checked JSON value, into *u as json.Unmarshal
// does: digits by hand, anything else (null, a type error) by it.
func readUint(raw []byte, u *uint64) bool {
	var v uint64
	for _, c := range raw {
		if c-'0' >= 10 || v > (1<<64-1-uint64(c-'0'))/10 {
			return json.Unmarshal(raw, u) == nil
		}
		v = v*10 + uint64(c-'0')
	}
	*u = v
	return true
}

// itemList reads the items: an array (each element's bounds kept) or
// null.
func (s *pageScanner) itemList() bool {
	if s.lit("null") {
		return true
	}
	if !s.byte('[') {
		return false
	}
	s.depth++
	defer func() { s.depth-- }()
	s.ws()
	if s.byte(']') {
		return true
	}
	for {
		start := s.i
		if !s.value() {
			return false
		}
		s.items = append(s.items, int32(start), int32(s.i))
		s.ws()
		if s.byte(']') {
			return true
		}
		if !s.byte(',') {
			return false
		}
		s.ws()
	}
}

// removed reads the removed ids: an array of strings, or null (which
// leaves them as they are).
func (s *pageScanner) removed(ids *[]string) bool {
	if s.lit("null") {
		return true
	}
	start := s.i
	if !s.value() {
		return false
	}
	raw := s.b[start:s.i]
	if raw[0] != '[' {
		return json.Unmarshal(raw, ids) == nil // its type error
	}
	out := []string{}
	t := pageScanner{b: raw, i: 1}
	t.ws()
	if t.byte(']') {
		*ids = out
		return true
	}
	for {
		from := t.i
		if !t.value() {
			return false
		}
		v := raw[from:t.i]
		if plain(v) {
			out = append(out, string(v[1:len(v)-1]))
		} else {
			var id string
			if json.Unmarshal(v, &id) != nil {
				return false
			}
			out = append(out, id)
		}
		t.ws()
		if t.byte(']') {
			*ids = out
			return true
		}
		t.byte(',')
		t.ws()
	}
}

// plain reports whether v, a checked JSON value, is a string of printable
// ASCII without escapes: its text is what is between its quotes.
func plain(v []byte) bool {
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c >= 0x7f {
			return false
		}
	}
	return true
}

// end checks that nothing but white space follows the page.
func (s *pageScanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

func (s *pageScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte reads c if it comes next.
func (s *pageScanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// lit reads the literal l if it comes next.
func (s *pageScanner) lit(l string) bool {
	if len(s.b)-s.i >= len(l) && string(s.b[s.i:s.i+len(l)]) == l {
		s.i += len(l)
		return true
	}
	return false
}

// key reads a member's name and its colon, and returns the name's text
// when it has no escapes (nil with ok when it has: no name of ours).
func (s *pageScanner) key() (name []byte, ok bool) {
	start := s.i
	if !s.str() {
		return nil, false
	}
	name = s.b[start+1 : s.i-1]
	for _, c := range name {
		if c == '\\' {
			return nil, false // encoding/json's to read
		}
	}
	s.ws()
	return name, s.byte(':')
}

// value checks one JSON value and reads past it.
func (s *pageScanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || c-'0' < 10:
		return s.number()
	}
	return false
}

func (s *pageScanner) object() bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++ // {
	s.ws()
	if s.byte('}') {
		s.depth--
		return true
	}
	for {
		if !s.str() {
			return false
		}
		s.ws()
		if !s.byte(':') {
			return false
		}
		s.ws()
		if !s.value() {
			return false
		}
		s.ws()
		if s.byte('}') {
			s.depth--
			return true
		}
		if !s.byte(',') {
			return false
		}
		s.ws()
	}
}

func (s *pageScanner) array() bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++ // [
	s.ws()
	if s.byte(']') {
		s.depth--
		return true
	}
	for {
		if !s.value() {
			return false
		}
		s.ws()
		if s.byte(']') {
			s.depth--
			return true
		}
		if !s.byte(',') {
			return false
		}
		s.ws()
	}
}

// strStop marks the bytes a string's plain run stops at: its end, an
// escape, and the controls JSON refuses in a string.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str checks a string (invalid UTF-8 is JSON to encoding/json, which
// replaces it) and reads past it.
func (s *pageScanner) str() bool {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return false
	}
	i++
	for {
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			return true
		case '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if !hex4(b[i+2:]) {
					return false
				}
				i += 6
			default:
				return false
			}
		default:
			return false // a control
		}
	}
}

// hex4 checks the four hex digits of a \u escape.
func hex4(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	for _, c := range b[:4] {
		if c-'0' >= 10 && c-'a' >= 6 && c-'A' >= 6 {
			return false
		}
	}
	return true
}

// number checks a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *pageScanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i]-'1' < 9:
		for i < len(b) && b[i]-'0' < 10 {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i]-'0' >= 10 {
			return false
		}
		for i < len(b) && b[i]-'0' < 10 {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i]-'0' >= 10 {
			return false
		}
		for i < len(b) && b[i]-'0' < 10 {
			i++
		}
	}
	s.i = i
	return true
}
