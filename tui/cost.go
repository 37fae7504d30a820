// The :cost view (what the fleet cost, by type, state or a label; the
// waste; the projection; the caps; the queued work's estimate; each live
// instance's burn) and the cost lines of the details screens, fetched
// from the backend's cost report (docs/design.md §6.1).

package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/table"
)

// costMsg is a cost fetch's result: a report (ctr empty) or one
// container's cost so far.
type costMsg struct {
	gen     uint64
	rep     *view.CostReport
	ctr     string
	dollars float64
	err     error
}

// costState is what the console knows of costs: the last report (the
// view and the instance details read it), the open container's cost, and
// the fetch in flight.
type costState struct {
	by  string // what the view sums by ("" = the server's default)
	rep *view.CostReport
	err error // the last report's fetch failed: why

	ctrID   string // the container whose cost ctrCost is
	ctrCost float64
	ctrErr  error

	gen    uint64    // only the latest fetch's result counts
	busy   bool      // one fetch in flight at a time
	repAt  time.Time // when the last report was asked for
	forced bool      // the next fetch asks whatever repAt says
}

// costRefresh is how often an open cost view or instance details read the
// report again: it reads the whole queue (the queued estimate), which the
// containers' snapshot does not.
const costRefresh = 5 * time.Second

// openCost shows the cost view, summed by by ("" = the server's default).
func (m *Model) openCost(by string) tea.Cmd {
	if by != m.cost.by {
		m.cost.by, m.cost.rep, m.cost.err = by, nil, nil
	}
	m.switchView(m.view)
	m.openScreen(modeCost)
	m.cost.gen++ // a fetch in flight for an earlier question is dropped
	m.cost.forced = true
	return m.fetchCost()
}

// fetchCost fetches what the open screen shows of costs: the report for
// the cost view and the instance details, a container's cost for its
// details. One at a time; a snapshot arriving asks again.
func (m *Model) fetchCost() tea.Cmd {
	ctr := ""
	switch md := m.screenMode(); {
	case md == modeCost, md == modeDetails && m.detailView == vInstances:
	case md == modeDetails && m.detailView == vContainers:
		ctr = m.detailID
	default:
		return nil
	}
	if m.cost.busy {
		return nil
	}
	if ctr == "" {
		if now := m.now(); m.cost.forced || now.Sub(m.cost.repAt) >= costRefresh {
			m.cost.repAt, m.cost.forced = now, false
		} else {
			return nil
		}
	}
	m.cost.busy = true
	gen, be, ctx, by := m.cost.gen, m.be, m.ctx, m.cost.by
	return func() tea.Msg {
		if ctr != "" {
			d, err := be.ContainerCost(ctx, ctr)
			return costMsg{gen: gen, ctr: ctr, dollars: d, err: err}
		}
		r, err := be.Cost(ctx, by)
		return costMsg{gen: gen, rep: r, err: err}
	}
}

func (m *Model) onCost(msg costMsg) tea.Cmd {
	m.cost.busy = false
	if msg.gen != m.cost.gen {
		return m.fetchCost() // asked again meanwhile
	}
	if msg.ctr != "" {
		m.cost.ctrID, m.cost.ctrCost, m.cost.ctrErr = msg.ctr, msg.dollars, msg.err
	} else if msg.err != nil {
		m.cost.err = msg.err // the last report stays shown, under the error
	} else {
		m.cost.rep, m.cost.err = msg.rep, nil
	}
	if md := m.screenMode(); md == modeCost || md == modeDetails {
		m.syncScreen()
	}
	return nil
}

func money(x float64) string { return "$" + strconv.FormatFloat(x, 'f', 2, 64) }

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

// costByHint says how to sum the view otherwise.
const costByHint = ":cost type | :cost state | :cost label=KEY"

// costLines is the cost view's text: the projection and bill first (what
// an operator asks first, in view at 80×24), then the groups, the waste,
// the caps, the queued work and the live instances.
func (m *Model) costLines() []string {
	r := m.cost.rep
	var out []string
	if m.cost.err != nil {
		out = append(out, m.th.Warn.Render("cost unavailable: "+termsafe.Escape(m.cost.err.Error())), "")
	}
	if r == nil {
		if m.cost.err == nil {
			out = append(out, "loading…")
		}
		return append(out, "", "Sum by: "+costByHint)
	}
	p := r.Projection
	waste := 0.0
	for _, w := range r.Waste {
		waste += w.Dollars
	}
	out = append(out,
		m.th.Bold.Render("Cost by "+termsafe.Escape(r.By))+" (all the ledger keeps; "+costByHint+")",
		fmt.Sprintf("now %s/h   today %s   day %s   month %s (at this rate)",
			money(p.RatePerHour), money(p.Today), money(p.Day), money(p.Month)),
		fmt.Sprintf("bill %s: containers %s, waste %s (%s)", money(r.Bill), money(r.Allocated), money(waste), pct(share(waste, r.Bill))),
	)
	for _, b := range r.Budgets {
		l := fmt.Sprintf("budget %s: %s/h of %s/h", termsafe.Escape(b.Name), money(b.RatePerHour), money(b.Limit))
		if b.Over {
			l = m.th.Warn.Render(l + " OVER: no new instances; nothing drained")
		}
		out = append(out, l)
	}
	out = append(out, "", m.th.Bold.Render(fmt.Sprintf("%-24s %10s %10s %8s", strings.ToUpper(byColumn(r.By)), "CTRS", "COST", "OF BILL")))
	for _, g := range r.Groups {
		out = append(out, fmt.Sprintf("%-24s %10d %10s %8s", cut(termsafe.Escape(g.Key), 24), g.Containers, money(g.Dollars), pct(share(g.Dollars, r.Bill))))
	}
	if len(r.Groups) == 0 {
		out = append(out, "(no container has cost anything yet)")
	}
	if len(r.Waste) > 0 {
		out = append(out, "", m.th.Bold.Render(fmt.Sprintf("%-24s %10s %10s %8s", "WASTE: TYPE", "KIND", "COST", "OF BILL")))
		for _, w := range r.Waste {
			out = append(out, fmt.Sprintf("%-24s %10s %10s %8s", cut(termsafe.Escape(w.Type), 24), w.Kind, money(w.Dollars), pct(w.Share)))
		}
	}
	out = append(out, m.queuedLines(r.Queued)...)
	if len(r.Instances) > 0 {
		out = append(out, "", m.th.Bold.Render(fmt.Sprintf("%-24s %-12s %10s %10s", "INSTANCE", "TYPE", "$/H NOW", "SO FAR")))
		for _, i := range r.Instances {
			out = append(out, fmt.Sprintf("%-24s %-12s %10s %10s", table.FitMiddle(i.ID, 24, false), cut(termsafe.Escape(i.Type), 12), money(i.RatePerHour), money(i.Dollars)))
		}
	}
	return out
}

// queuedLines are the queued work's estimate, saying what it is.
func (m *Model) queuedLines(q *view.QueuedCost) []string {
	if q == nil || len(q.Lines) == 0 && len(q.Ranges) == 0 {
		return nil
	}
	out := []string{""}
	if len(q.Lines) > 0 {
		out = append(out, m.th.Bold.Render(fmt.Sprintf("%-24s %10s %21s %10s", "QUEUED: TYPE", "WAITING", "MEDIAN RUN", "ESTIMATE")))
	}
	for _, l := range q.Lines {
		run, d := "unknown", "unknown"
		if l.Known {
			run = fmt.Sprintf("%s of %d", fmtRun(l.MedianRun), l.Finished)
			d = money(l.Dollars)
		}
		out = append(out, fmt.Sprintf("%-24s %10d %21s %10s", cut(termsafe.Escape(l.Type), 24), l.Containers, run, d))
	}
	if len(q.Ranges) > 0 {
		out = append(out, m.th.Bold.Render(fmt.Sprintf("%-24s %10s %32s", "NO TYPE YET: MAY GET", "WAITING", "ESTIMATE")))
	}
	for _, r := range q.Ranges {
		types := "(no type holds them)"
		if len(r.Types) > 0 {
			types = termsafe.Escape(strings.Join(r.Types, ","))
		}
		out = append(out, fmt.Sprintf("%-24s %10d %32s", cut(types, 24), r.Containers, moneyRange(r.Known, r.Low, r.High)))
	}
	out = append(out, "queued "+moneyRange(true, q.Low, q.High)+" (type's price × median run of those finished on it)")
	var not []string
	if q.Unknown > 0 {
		not = append(not, fmt.Sprintf("%d locked", q.Unknown))
	}
	if q.Untyped > 0 {
		not = append(not, fmt.Sprintf("%d not locked", q.Untyped))
	}
	if len(not) > 0 {
		out = append(out, "not estimated: "+strings.Join(not, ", ")+" (none finished on their types)")
	}
	return out
}

// moneyRange is "$1.00", or "$1.00–$2.50" when the ends differ; "unknown"
// when not known.
func moneyRange(known bool, low, high float64) string {
	switch {
	case !known:
		return "unknown"
	case money(low) == money(high):
		return money(low)
	}
	return money(low) + "–" + money(high)
}

// fmtRun is a run time to the second, compactly: 25m0s, 2h0m0s, 45s.
func fmtRun(d time.Duration) string { return d.Round(time.Second).String() }

// byColumn is the first column's title for a report summed by by.
func byColumn(by string) string {
	if k, ok := strings.CutPrefix(by, "label="); ok {
		return k
	}
	return by
}

func share(x, of float64) float64 {
	if of <= 0 {
		return 0
	}
	return x / of
}

// cut shortens s to n cells with a trailing "…".
func cut(s string, n int) string { return fitLine(s, n) }

// instanceCostLine is the cost line of an instance's details: its burn
// now and its total so far, from the last report.
func (m *Model) instanceCostLine(id string) string {
	if m.cost.rep == nil {
		if m.cost.err != nil {
			return "unavailable: " + m.cost.err.Error()
		}
		return "(loading)" // not "…", which reads as a cut value
	}
	for _, i := range m.cost.rep.Instances {
		if i.ID == id {
			return money(i.RatePerHour) + "/h now, " + money(i.Dollars) + " so far"
		}
	}
	return "- (not in the cost ledger yet)"
}

// containerCostLine is the cost line of a container's details.
func (m *Model) containerCostLine(id string) string {
	switch {
	case m.cost.ctrID != id:
		return "(loading)"
	case m.cost.ctrErr != nil:
		return "unavailable: " + m.cost.ctrErr.Error()
	}
	return money(m.cost.ctrCost) + " so far (its share of the instances it ran on)"
}
