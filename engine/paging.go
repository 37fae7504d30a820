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
	e.queue.EachFrom(from, func(c *queue.Container) bool {
		if !pageMatch(c, opts) {
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

// pageMatch is Containers' filter (states, labels, then q) for one
// container.
func pageMatch(c *queue.Container, opts ListOptions) bool {
	if len(opts.States) > 0 && !slices.Contains(opts.States, c.State) {
		return false
	}
	if len(opts.Labels) > 0 && !hasLabels(c.Labels, opts.Labels) {
		return false
	}
	return opts.Query == "" || matches(c, opts.Query)
}

// countMatching counts the containers opts matches: from the counts by
// state, or with a q or label filter by walking them all.
func (e *Engine) countMatching(opts ListOptions) int {
	n := 0
	if opts.Query != "" || len(opts.Labels) > 0 {
		e.queue.EachFrom(0, func(c *queue.Container) bool {
			if pageMatch(c, opts) {
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
