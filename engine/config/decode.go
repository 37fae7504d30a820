// Decoding: the file's TOML, decoded once into a generic map, walked
// along the key table into a Config, every bad value and unknown key
// reported with its line.

package config

import (
	"dispatch-tui/engine/view"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// index is the key table by key, for the walk.
var index = newSchema(table)

// parser collects the errors of one Parse.
type parser struct {
	file   string
	dir    string // the config file's directory: relative paths are relative to it
	loc    *locator
	errs   Errors
	failed map[string]bool // keys whose value could not be used: their checks stay quiet
	// misshapen: a table or array of tables is something else; the
	// values the checks would look at may be missing, so they do not run.
	misshapen bool
}

func (p *parser) result() error {
	sortErrors(p.errs)
	return p.errs
}

// fail records that key's value (key being an indexed path) is unusable.
func (p *parser) fail(key, format string, args ...any) {
	p.failed[key] = true
	p.errs = append(p.errs, &Error{File: p.file, Line: p.loc.line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) misshape(key, format string, args ...any) {
	p.misshapen = true
	p.fail(key, format, args...)
}

// walk decodes the table m into c. plain is m's key without array
// indices, path with them (as errors name it); i is the index of the
// element of the array of tables m is in (arrays of tables do not nest).
func (p *parser) walk(c *Config, m map[string]any, plain toml.Key, path string, i int) {
	for _, k := range sortedKeys(m) {
		v := m[k]
		pk := append(plain[:len(plain):len(plain)], k)
		key := joinKey(path, k)
		r, known := index.rows[pk.String()]
		switch {
		case !known:
			p.unknown(pk, key)
		case r == nil: // a section
			if sub, ok := v.(map[string]any); ok {
				p.walk(c, sub, pk, key, i)
			} else {
				p.misshape(key, "must be a table (got %s)", tomlType(v))
			}
		case r.kind == kindTables:
			p.tables(c, r, v, pk, key)
		case r.kind == kindStringMap:
			p.stringMap(key, v, r.at(c, i).(*map[string]string))
		default:
			p.value(key, r.kind, v, r.at(c, i))
		}
	}
}

// tables decodes an array of tables over the default elements.
func (p *parser) tables(c *Config, r *row, v any, plain toml.Key, key string) {
	var elems []any
	switch a := v.(type) {
	case []map[string]any:
		for _, e := range a {
			elems = append(elems, e)
		}
	case []any:
		elems = a
	default:
		p.misshape(key, "must be an array of tables, written [[%s]] (got %s)", key, tomlType(v))
		return
	}
	r.resize(c, len(elems))
	for i, e := range elems {
		for _, er := range r.elems {
			er.reset(c, i)
		}
		ekey := fmt.Sprintf("%s[%d]", key, i)
		if m, ok := e.(map[string]any); ok {
			p.walk(c, m, plain, ekey, i)
		} else {
			p.misshape(ekey, "must be a table (got %s)", tomlType(e))
		}
	}
}

// stringMap decodes a table of strings; an empty one keeps the default.
func (p *parser) stringMap(key string, v any, dst *map[string]string) {
	m, ok := v.(map[string]any)
	if !ok {
		p.misshape(key, "must be a table (got %s)", tomlType(v))
		return
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if s, ok := m[k].(string); ok {
			out[k] = s
		} else {
			p.fail(joinKey(key, k), "must be a string (got %s)", tomlType(m[k]))
		}
	}
	if len(out) > 0 {
		*dst = out
	}
}

// value converts v to the type dst points to, by kind; it leaves dst alone
// when v is bad, and says why.
func (p *parser) value(key string, k kind, v any, dst any) {
	msg := ""
	switch dst := dst.(type) {
	case *string:
		s, ok := v.(string)
		switch {
		case !ok:
			msg = fmt.Sprintf("must be a string (got %s)", tomlType(v))
		case k == kindPath:
			*dst = localPath(p.dir, s)
		default:
			*dst = s
		}
	case *int:
		n, ok := v.(int64)
		switch {
		case !ok:
			msg = fmt.Sprintf("must be an integer (got %s)", tomlType(v))
		case int64(int(n)) != n:
			msg = fmt.Sprintf("out of range (got %d)", n)
		default:
			*dst = int(n)
		}
	case *float64:
		msg = numberValue(v, dst)
	case *bool:
		if b, ok := v.(bool); ok {
			*dst = b
		} else {
			msg = fmt.Sprintf("must be true or false (got %s)", tomlType(v))
		}
	case *int64:
		msg = sizeValue(v, dst)
	case *time.Duration:
		msg = durationValue(v, dst)
	case *[]string:
		msg = stringList(v, dst)
		if msg == "" && k == kindArgv && len(*dst) > 0 && strings.Contains((*dst)[0], "/") {
			(*dst)[0] = localPath(p.dir, (*dst)[0])
		}
	default:
		panic(fmt.Sprintf("config: %s: no conversion to %T", key, dst))
	}
	if msg != "" {
		p.fail(key, "%s", msg)
	}
}

func numberValue(v any, dst *float64) string {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return fmt.Sprintf("must be a number (got %s)", tomlType(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprintf("must be a finite number (got %v)", f)
	}
	*dst = f
	return ""
}

func sizeValue(v any, dst *int64) string {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Sprintf("must not be negative (got %d)", x)
		}
		*dst = x
	case string:
		n, err := view.ParseSize(x)
		if err != nil {
			return err.Error()
		}
		*dst = n
	default:
		return fmt.Sprintf("must be a size like \"2GiB\" or a number of bytes (got %s)", tomlType(v))
	}
	return ""
}

func durationValue(v any, dst *time.Duration) string {
	s, ok := v.(string)
	if !ok {
		return fmt.Sprintf("must be a duration string like \"90s\" or \"10m\" (got %s)", tomlType(v))
	}
	d, err := ParseDuration(s)
	if err != nil {
		return err.Error()
	}
	*dst = d
	return ""
}

func stringList(v any, dst *[]string) string {
	a, ok := v.([]any)
	if !ok {
		return fmt.Sprintf("must be an array of strings like [\"a\", \"b\"] (got %s)", tomlType(v))
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return fmt.Sprintf("element %d must be a string (got %s)", i, tomlType(e))
		}
		out = append(out, s)
	}
	*dst = out
	return ""
}

// unknown reports a key the table does not know (k plain, key indexed),
// with a close known one if there is one. Keys below it are not walked.
func (p *parser) unknown(k toml.Key, key string) {
	msg := "unknown key " + k.String()
	parent, piece := k[:len(k)-1], k[len(k)-1]
	best, bestDist := "", 3
	for _, name := range index.children[parent.String()] {
		if d := editDistance(strings.ToLower(piece), name); d < bestDist {
			best, bestDist = name, d
		}
	}
	if best != "" {
		msg += " (did you mean " + append(parent[:len(parent):len(parent)], best).String() + "?)"
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: p.loc.line(key), Msg: msg})
}

// editDistance is the Levenshtein distance between a and b, capped for
// long inputs.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case time.Time:
		return "date-time"
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
