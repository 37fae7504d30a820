// Config errors tied to their file, line and key, reported like a compiler's.

package config

import (
	"sort"
	"strconv"
	"strings"
)

// Error is one problem found in a configuration, tied to the line of the
// key it is about. Its text reads like a compiler's:
//
//	config.toml:12: dispatcher.max_instances: must be >= 1 (got 0)
type Error struct {
	File string // the config file's path as given; "" for a config built in code
	Line int    // 1-based; 0 when unknown
	Key  string // dotted key, e.g. "dispatcher.max_instances" or "instance_type[1].ram"; may be ""
	Msg  string

	// lineKey, if set, is the key whose line to report when Key itself is
	// not in the file (e.g. a missing token is reported at listen's line).
	lineKey string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one configuration, in line order. Parse,
// Load and Validate return it (as an error) when anything is wrong.
type Errors []*Error

// Error joins the errors, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sortErrors orders errors by line; errors without a line go last. The sort
// is stable, so errors on one line keep the order they were found in.
func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool {
		li, lj := es[i].Line, es[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
}
