// The container list in submission order, a page at a time.

package engine

import (
	"slices"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// ContainerPage is one page of the container list in submission order.
type ContainerPage struct {
	Items []view.Container
	// Next is where the next page starts (pass it as from), valid when
	// More is set.
	Next uint64
	More bool
	// Total is how many containers match in all (from the counts by
	// state, unless a q filter makes it a walk).
	Total int
}

// ContainersFrom returns up to opts.Limit containers matching opts' state
// and q filters whose submission sequence is at least from, in submission
// order: pages chained through Next cover every container that exists
// throughout exactly once, whatever is submitted, started or ended in
// between (opts.Sort and opts.Offset do not apply). Only the page is
// walked and copied, so the first page of a million-container queue costs
// what the page does.
func (e *Engine) ContainersFrom(opts ListOptions, from uint64) ContainerPage {
	limit := opts.Limit
	if limit <= 0 {
		limit = 1000
	}
	page := make([]*queue.Container, 0, min(limit, 4096))
	var p ContainerPage
	m := matcherOf(opts)
	e.queue.EachFrom(from, func(c *queue.Container) bool {
		if !m.match(c) {
			return true
		}
		if len(page) == limit {
			p.More = true
			return false
		}
		page = append(page, c)
		return true
	})
	p.Items = e.queue.Views(page)
	if p.More {
		p.Next = p.Items[len(p.Items)-1].Seq + 1
	}
	p.Total = e.countMatching(opts)
	return p
}

// matcher is a list filter (states, labels, then q) made ready to test
// many containers: a bulk verb's selector walks up to the whole queue, and
// walking the filter's label map for each container was most of that walk
// (BENCHMARKS.md, helper churn).
type matcher struct {
	states []queue.State
	labels []labelPair
	query  string
}

// labelPair is one label a filter asks for.
type labelPair struct{ key, value string }

func matcherOf(opts ListOptions) matcher {
	m := matcher{states: opts.States, query: opts.Query}
	for k, v := range opts.Labels {
		m.labels = append(m.labels, labelPair{k, v})
	}
	return m
}

// match reports whether c passes the filter.
func (m *matcher) match(c *queue.Container) bool {
	if len(m.states) > 0 && !slices.Contains(m.states, c.State) {
		return false
	}
	for _, l := range m.labels {
		if v, ok := c.Labels[l.key]; !ok || v != l.value {
			return false
		}
	}
	return m.query == "" || matches(c, m.query)
}

// countMatching counts the containers opts matches: from the counts by
// state, or with a q or label filter by walking them all.
func (e *Engine) countMatching(opts ListOptions) int {
	n := 0
	if opts.Query != "" || len(opts.Labels) > 0 {
		m := matcherOf(opts)
		e.queue.EachFrom(0, func(c *queue.Container) bool {
			if m.match(c) {
				n++
			}
			return true
		})
		return n
	}
	for s, k := range e.queue.Counts() {
		if len(opts.States) == 0 || slices.Contains(opts.States, s) {
			n += k
		}
	}
	return n
}
