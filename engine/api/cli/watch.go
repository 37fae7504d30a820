// Printing a listing once, or with --watch only what changed.

package cli

// Printing a listing, once or with --watch: then the whole listing once,
// and after it only what changed (kubectl get -w): a table's new and
// changed rows, compared without the columns the clock moves (AGE); new
// names for -o name; the whole object again for -o json and yaml.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"dispatch-tui/engine/api"
)

// printed is one fetch of a listing, ready to print.
type printed struct {
	obj     any
	names   []string
	t       *table
	footer  []string
	warning string // the store warning for stderr, "" when none
}

// show prints one listing, or with --watch keeps printing its changes
// until ctx ends. While the daemon's store cannot write, a warning goes to
// stderr (stdout stays the listing), again whenever it changes.
func show(ctx context.Context, env *Env, c *api.Client, lf *listFlags, fetch listing) error {
	get := func() (printed, error) {
		var p printed
		var err error
		p.obj, p.names, p.t, p.footer, err = fetch(ctx, c)
		if err != nil {
			return p, explain(c, err)
		}
		p.warning = storeWarning(ctx, c)
		return p, nil
	}
	p, err := get()
	if err != nil {
		return err
	}
	io.WriteString(env.Stderr, p.warning)
	if err := printAll(env, lf, p); err != nil || !lf.watch {
		return err
	}
	interval := env.WatchInterval
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := p
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		p, err := get()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if p.warning != last.warning {
			io.WriteString(env.Stderr, p.warning)
		}
		if err := printChanges(env, lf, last, p); err != nil {
			return err
		}
		last = p
	}
}

// printAll prints a whole listing in lf's format.
func printAll(env *Env, lf *listFlags, p printed) error {
	var b bytes.Buffer
	var err error
	switch lf.output {
	case "json":
		err = writeJSON(&b, p.obj)
	case "yaml":
		err = writeYAML(&b, p.obj)
	case "name":
		for _, n := range p.names {
			fmt.Fprintln(&b, n)
		}
	default:
		err = p.t.render(&b, layout{width: tableWidth(env), wide: lf.output == "wide", headers: !lf.noHeaders})
		if !lf.noHeaders {
			for _, f := range p.footer {
				fmt.Fprintln(&b, f)
			}
		}
	}
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(b.Bytes())
	return err
}

// printChanges prints what changed from last to p: nothing when nothing
// did.
func printChanges(env *Env, lf *listFlags, last, p printed) error {
	var b bytes.Buffer
	switch lf.output {
	case "json", "yaml":
		var was, now bytes.Buffer
		if err := printAll(&Env{Stdout: &was}, lf, last); err != nil {
			return err
		}
		if err := printAll(&Env{Stdout: &now}, lf, p); err != nil || bytes.Equal(was.Bytes(), now.Bytes()) {
			return err
		}
		b.Write(now.Bytes())
	case "name":
		old := make(map[string]bool, len(last.names))
		for _, n := range last.names {
			old[n] = true
		}
		for _, n := range p.names {
			if !old[n] {
				fmt.Fprintln(&b, n)
			}
		}
	default:
		changed := p.t.changedSince(last.t)
		if len(changed.rows) == 0 {
			return nil
		}
		if err := changed.render(&b, layout{width: tableWidth(env), wide: lf.output == "wide"}); err != nil {
			return err
		}
	}
	_, err := env.Stdout.Write(b.Bytes())
	return err
}

// changedSince returns the rows of t that are new or differ from their
// row in last (same first cell), the columns the clock moves left out of
// the comparison.
func (t *table) changedSince(last *table) *table {
	key := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			if i < len(t.cols) && t.cols[i].clock {
				continue
			}
			b.WriteString(c)
			b.WriteByte(0)
		}
		return b.String()
	}
	old := make(map[string]string, len(last.rows))
	for _, r := range last.rows {
		old[r[0]] = key(r)
	}
	out := &table{cols: t.cols}
	for _, r := range t.rows {
		if k, ok := old[r[0]]; !ok || k != key(r) {
			out.rows = append(out.rows, r)
		}
	}
	return out
}
