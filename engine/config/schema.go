// The schema: what a row of the key table (keys.go) is, and the typed
// constructors that build one.

package config

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// kind is how a key's TOML value becomes its Go value.
type kind uint8

const (
	kindString    kind = iota
	kindPath           // a file on this machine: relative to the config's directory, "~/" the home; no control characters
	kindInt            // an integer that fits an int
	kindFloat          // a finite number, integer or float
	kindBool           // true or false
	kindSize           // bytes: an integer, or a string like "2GiB"
	kindDuration       // a Go duration string like "90s"
	kindStrings        // an array of strings
	kindArgv           // an array of strings whose first names a program: relative to the config's directory when it has a slash
	kindStringMap      // a table of strings (any keys); an empty one keeps the default
	kindTables         // an array of tables; the keys of its elements are its rows' elems
)

// row is one key of the file: where its value lives in a Config, its
// default, its check and its doc line.
type row struct {
	// key is the dotted key; for a key of the elements of an array of
	// tables it starts with the array's key ("instance_type.ram").
	key  string
	kind kind
	doc  string
	// exampleCommented: config.toml.example may show the key only in a
	// comment (it has no default worth setting, e.g. a list of subnets).
	exampleCommented bool
	// lineKey, if set, is the key whose line an error points at when
	// this key is not in the file (a missing token points at listen).
	lineKey string

	// at returns a pointer to the key's field: *string, *int, *float64,
	// *bool, *int64 (sizes), *time.Duration, *[]string or
	// *map[string]string. i is the element's index below an array of
	// tables.
	at func(c *Config, i int) any
	// reset sets the field to its default (a fresh copy of it).
	reset func(c *Config, i int)
	// check reports what is wrong with the field's value; nil = nothing
	// to check beyond its kind.
	check func(s *site)

	// Arrays of tables only: how many elements c holds, and making it n
	// zero elements long.
	count  func(c *Config) int
	resize func(c *Config, n int)
	// elems are the rows of an array's elements; in is the array a row
	// of an element belongs to.
	elems []*row
	in    *row
}

// name is the key's last piece.
func (r *row) name() string { return r.key[strings.LastIndexByte(r.key, '.')+1:] }

// check is one check of a value of type T.
type check[T any] func(v T, s *site)

// leaf builds the row of a key of kind k whose value is a T; i in at is the
// element's index below an array of tables (top-level keys ignore it).
func leaf[T any](k kind, key string, def T, at func(c *Config, i int) *T, doc string, checks ...check[T]) *row {
	r := &row{key: key, kind: k, doc: doc, at: func(c *Config, i int) any { return at(c, i) }}
	r.reset = func(c *Config, i int) { *at(c, i) = fresh(def) }
	if len(checks) > 0 {
		r.check = func(s *site) {
			v := *at(s.c, s.i)
			for _, ch := range checks {
				ch(v, s)
			}
		}
	}
	return r
}

// fresh returns a copy of def that shares nothing with it.
func fresh[T any](def T) T {
	switch d := any(def).(type) {
	case []string:
		return any(slices.Clone(d)).(T)
	case map[string]string:
		return any(maps.Clone(d)).(T)
	}
	return def
}

// The constructors of the table, one per kind.

func str(key, def string, at func(*Config, int) *string, doc string, checks ...check[string]) *row {
	return leaf(kindString, key, def, at, doc, checks...)
}

func path(key string, at func(*Config, int) *string, doc string, checks ...check[string]) *row {
	return leaf(kindPath, key, "", at, doc, checks...)
}

func integer(key string, def int, at func(*Config, int) *int, doc string, checks ...check[int]) *row {
	return leaf(kindInt, key, def, at, doc, checks...)
}

func number(key string, def float64, at func(*Config, int) *float64, doc string, checks ...check[float64]) *row {
	return leaf(kindFloat, key, def, at, doc, checks...)
}

func boolean(key string, def bool, at func(*Config, int) *bool, doc string, checks ...check[bool]) *row {
	return leaf(kindBool, key, def, at, doc, checks...)
}

func size(key string, def int64, at func(*Config, int) *int64, doc string, checks ...check[int64]) *row {
	return leaf(kindSize, key, def, at, doc, checks...)
}

func duration(key string, def time.Duration, at func(*Config, int) *time.Duration, doc string, checks ...check[time.Duration]) *row {
	return leaf(kindDuration, key, def, at, doc, checks...)
}

func strs(key string, def []string, at func(*Config, int) *[]string, doc string, checks ...check[[]string]) *row {
	return leaf(kindStrings, key, def, at, doc, checks...)
}

func argv(key string, at func(*Config, int) *[]string, doc string, checks ...check[[]string]) *row {
	return leaf[[]string](kindArgv, key, nil, at, doc, checks...)
}

func strMap(key string, def map[string]string, at func(*Config, int) *map[string]string, doc string, checks ...check[map[string]string]) *row {
	return leaf(kindStringMap, key, def, at, doc, checks...)
}

// tables builds the row of an array of tables whose elements are E, with
// the rows of the elements' keys; def makes the default elements.
func tables[E any](key string, def func() []E, at func(*Config) *[]E, doc string, elems []*row, checks ...check[[]E]) *row {
	r := &row{key: key, kind: kindTables, doc: doc, at: func(c *Config, _ int) any { return at(c) }}
	r.reset = func(c *Config, _ int) { *at(c) = def() }
	if len(checks) > 0 {
		r.check = func(s *site) {
			for _, ch := range checks {
				ch(*at(s.c), s)
			}
		}
	}
	r.count = func(c *Config) int { return len(*at(c)) }
	r.resize = func(c *Config, n int) { *at(c) = make([]E, n) }
	r.elems = elems
	for _, e := range elems {
		e.in = r
	}
	return r
}

// commented marks r as shown only in a comment of config.toml.example.
func commented(r *row) *row {
	r.exampleCommented = true
	return r
}

// pointAt makes r's errors point at other's line when r is not in the file.
func pointAt(r *row, other string) *row {
	r.lineKey = other
	return r
}

// schema indexes the table by plain key (no array indices), parents
// included: what the file may hold.
type schema struct {
	rows     map[string]*row     // a key's row; nil for a section
	children map[string][]string // a section's or array's keys, by plain key ("" = the top)
}

func newSchema(table []*row) *schema {
	s := &schema{rows: map[string]*row{}, children: map[string][]string{}}
	var add func(r *row)
	add = func(r *row) {
		s.rows[r.key] = r // a key in the table twice fails TestKeyTable
		key := r.key
		for {
			i := strings.LastIndexByte(key, '.')
			parent, name := "", key
			if i >= 0 {
				parent, name = key[:i], key[i+1:]
			}
			if !slices.Contains(s.children[parent], name) {
				s.children[parent] = append(s.children[parent], name)
			}
			if i < 0 {
				break
			}
			if _, known := s.rows[parent]; known {
				break
			}
			s.rows[parent] = nil
			key = parent
		}
		for _, e := range r.elems {
			add(e)
		}
	}
	for _, r := range table {
		add(r)
	}
	return s
}

// joinKey appends one piece, quoted as TOML needs, to a dotted key.
func joinKey(path, key string) string {
	k := toml.Key{key}.String()
	if path == "" {
		return k
	}
	return path + "." + k
}
