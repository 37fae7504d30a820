// Validation: every row's check, run over a decoded or hand-built Config.

package config

import "fmt"

// Validate checks c's values: ranges, enumerations, instance types and
// hosts. Parse and Load already do this (with line numbers); Validate is
// for configs built or changed in code. It returns Errors or nil.
func (c *Config) Validate() error {
	es := c.validate()
	if len(es) == 0 {
		return nil
	}
	for _, e := range es {
		e.File = c.Path
	}
	return Errors(es)
}

// validate runs the checks of the table in its order, those of an array's
// elements element by element. The errors carry keys, not lines.
func (c *Config) validate() []*Error {
	var errs []*Error
	for _, r := range table {
		checkRow(c, r, 0, r.key, &errs)
		if r.kind != kindTables {
			continue
		}
		for i := range r.count(c) {
			for _, e := range r.elems {
				checkRow(c, e, i, fmt.Sprintf("%s[%d].%s", r.key, i, e.name()), &errs)
			}
		}
	}
	return errs
}

func checkRow(c *Config, r *row, i int, key string, errs *[]*Error) {
	s := &site{c: c, i: i, key: key, lineKey: r.lineKey, errs: errs}
	if r.check != nil {
		r.check(s)
	}
	if r.kind == kindPath {
		noControl(*r.at(c, i).(*string), s)
	}
}
