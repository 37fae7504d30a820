// dispatch-tui cost: what the instances cost, summed by a container label,
// the instance type or the containers' state, with the waste lines, the
// projection, the dollar caps and the queued work's estimate, as a table,
// JSON, YAML or CSV.

package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// costOutputs are the -o formats of cost.
var costOutputs = []string{"table", "json", "yaml", "csv"}

func costCmd(env *Env) *cobra.Command {
	var by, output string
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "What the instances cost: by label, type or state, waste, projection",
		Long: `What the instances cost over a window, from the dispatcher's cost ledger:
the containers' costs summed by a label's value (--by label=team), by the
instance type they ran on (--by type) or by their state now (--by state);
the idle, boot and drain time of instances as waste lines per type, with
their share of the bill; the burn rate now, today so far and the day and
month at that rate; and the dollar caps ([dispatcher] max_hourly_cost,
[[budget]]) with what they cap now; and what the containers waiting now
would cost: those locked to a type at its price × the median run time of
the containers finished on it (unknown when none has finished there).`,
		Example: `  dispatch-tui cost --by label=team --since 24h
  dispatch-tui cost --by type -o csv`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(costOutputs, output) {
				return usagef("-o must be one of %s", strings.Join(costOutputs, ", "))
			}
			if _, err := cost.ParseBy(by); err != nil {
				return usagef("--by: %v", err)
			}
			if since < 0 {
				return usagef("--since must not be negative")
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			r, err := c.Cost(cmd.Context(), by, since)
			if err != nil {
				return err
			}
			switch output {
			case "json":
				return writeJSON(env.Stdout, r)
			case "yaml":
				return writeYAML(env.Stdout, r)
			case "csv":
				return writeCostCSV(env.Stdout, r)
			}
			return writeCostTable(env.Stdout, r, since)
		},
	}
	f := cmd.Flags()
	f.StringVar(&by, "by", api.DefaultCostBy, "sum containers' costs by: "+cost.ByNames)
	f.DurationVar(&since, "since", 0, "only the last `DURATION` (24h, 90m); 0 = all the ledger keeps (35 days after an instance is gone)")
	f.StringVarP(&output, "output", "o", "table", "output format: "+strings.Join(costOutputs, ", "))
	cmd.RegisterFlagCompletionFunc("output", fixedCompletion(costOutputs...))
	cmd.RegisterFlagCompletionFunc("by", fixedCompletion("type", "state", "label="))
	return cmd
}

func dollars(x float64) string { return "$" + strconv.FormatFloat(x, 'f', 2, 64) }

func percent(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

// writeCostTable prints r for people: the groups, the waste, the bill, the
// projection and the caps.
func writeCostTable(w io.Writer, r view.CostReport, since time.Duration) error {
	window := "since " + r.From.Local().Format(time.DateTime)
	if since == 0 {
		window = "all kept"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cost by %s, %s\n\n", termsafe.Escape(r.By), window)
	g := &table{cols: []column{{name: strings.ToUpper(termsafe.Escape(byTitle(r.By)))}, {name: "CONTAINERS"}, {name: "COST"}}}
	for _, x := range r.Groups {
		g.add(termsafe.Escape(x.Key), strconv.Itoa(x.Containers), dollars(x.Dollars))
	}
	if err := g.render(&b, layout{headers: true}); err != nil {
		return err
	}
	if len(r.Waste) > 0 {
		b.WriteString("\nwaste (instances running no container)\n")
		wt := &table{cols: []column{{name: "TYPE"}, {name: "KIND"}, {name: "COST"}, {name: "OF BILL"}}}
		for _, x := range r.Waste {
			wt.add(termsafe.Escape(x.Type), string(x.Kind), dollars(x.Dollars), percent(x.Share))
		}
		if err := wt.render(&b, layout{headers: true}); err != nil {
			return err
		}
	}
	p := r.Projection
	fmt.Fprintf(&b, "\nbill %s, of which containers %s\n", dollars(r.Bill), dollars(r.Allocated))
	fmt.Fprintf(&b, "now %s/h; today %s so far, %s at this rate; this month %s at this rate\n",
		dollars(p.RatePerHour), dollars(p.Today), dollars(p.Day), dollars(p.Month))
	for _, x := range r.Budgets {
		fmt.Fprintf(&b, "budget %s: %s/h of %s/h", termsafe.Escape(x.Name), dollars(x.RatePerHour), dollars(x.Limit))
		if x.Over {
			b.WriteString(" (over: no new instances under it until it falls below; nothing is drained)")
		}
		b.WriteString("\n")
	}
	if err := writeQueuedTable(&b, r.Queued); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeQueuedTable prints the queued work's estimate, saying what it is
// and what it could not estimate.
func writeQueuedTable(b *strings.Builder, q *view.QueuedCost) error {
	if q == nil || len(q.Lines) == 0 && len(q.Ranges) == 0 {
		return nil
	}
	b.WriteString("\nqueued work (estimate: the type's price × the median run of containers finished on it)\n")
	if len(q.Lines) > 0 {
		t := &table{cols: []column{{name: "TYPE"}, {name: "WAITING"}, {name: "MEDIAN RUN"}, {name: "COST"}}}
		for _, l := range q.Lines {
			run, c := "unknown", "unknown"
			if l.Known {
				run, c = fmt.Sprintf("%s of %d", l.MedianRun.Round(time.Second), l.Finished), dollars(l.Dollars)
			}
			t.add(termsafe.Escape(l.Type), strconv.Itoa(l.Containers), run, c)
		}
		if err := t.render(b, layout{headers: true}); err != nil {
			return err
		}
	}
	if len(q.Ranges) > 0 {
		b.WriteString("not locked to a type yet (from the cheapest to the dearest type they may get)\n")
		t := &table{cols: []column{{name: "MAY GET"}, {name: "WAITING"}, {name: "COST"}}}
		for _, r := range q.Ranges {
			t.add(typeList(r.Types), strconv.Itoa(r.Containers), costRange(r.Known, r.Low, r.High))
		}
		if err := t.render(b, layout{headers: true}); err != nil {
			return err
		}
	}
	fmt.Fprintf(b, "queued %s", costRange(true, q.Low, q.High))
	if q.Unknown > 0 {
		fmt.Fprintf(b, "; %d not estimated (no container has finished on their type)", q.Unknown)
	}
	if q.Untyped > 0 {
		fmt.Fprintf(b, "; %d not locked to a type and not estimated (none finished on a type they may get)", q.Untyped)
	}
	b.WriteString("\n")
	return nil
}

// costRange is "$1.00", or "$1.00–$2.50" when the ends differ; "unknown"
// when not known.
func costRange(known bool, low, high float64) string {
	if !known {
		return "unknown"
	}
	if dollars(low) == dollars(high) {
		return dollars(low)
	}
	return dollars(low) + "–" + dollars(high)
}

// typeList names the types a container may get; "(no type holds them)" when
// there are none.
func typeList(types []string) string {
	if len(types) == 0 {
		return "(no type holds them)"
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = termsafe.Escape(t)
	}
	return strings.Join(names, ",")
}

// byTitle is the first column's title for a report summed by by.
func byTitle(by string) string {
	if k, ok := strings.CutPrefix(by, "label="); ok {
		return k
	}
	return by
}

// writeCostCSV prints r as rows of section, key, kind, containers,
// dollars and share.
func writeCostCSV(w io.Writer, r view.CostReport) error {
	cw := csv.NewWriter(w)
	money := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	rows := [][]string{{"section", "key", "kind", "containers", "dollars", "share"}}
	for _, x := range r.Groups {
		rows = append(rows, []string{"group", x.Key, r.By, strconv.Itoa(x.Containers), money(x.Dollars), ""})
	}
	for _, x := range r.Waste {
		rows = append(rows, []string{"waste", x.Type, string(x.Kind), "", money(x.Dollars), strconv.FormatFloat(x.Share, 'f', 6, 64)})
	}
	p := r.Projection
	rows = append(rows,
		[]string{"bill", "total", "", "", money(r.Bill), ""},
		[]string{"bill", "containers", "", "", money(r.Allocated), ""},
		[]string{"projection", "rate_per_hour", "", "", money(p.RatePerHour), ""},
		[]string{"projection", "today", "", "", money(p.Today), ""},
		[]string{"projection", "day", "", "", money(p.Day), ""},
		[]string{"projection", "month", "", "", money(p.Month), ""},
	)
	for _, x := range r.Budgets {
		rows = append(rows, []string{"budget", x.Name, "rate_per_hour", "", money(x.RatePerHour), strconv.FormatFloat(x.RatePerHour/x.Limit, 'f', 6, 64)})
	}
	if q := r.Queued; q != nil {
		for _, l := range q.Lines {
			d := ""
			if l.Known {
				d = money(l.Dollars)
			}
			rows = append(rows, []string{"queued", l.Type, "estimate", strconv.Itoa(l.Containers), d, ""})
		}
		for _, x := range q.Ranges {
			lo, hi := "", ""
			if x.Known {
				lo, hi = money(x.Low), money(x.High)
			}
			types := strings.Join(x.Types, " ")
			rows = append(rows,
				[]string{"queued", types, "low", strconv.Itoa(x.Containers), lo, ""},
				[]string{"queued", types, "high", strconv.Itoa(x.Containers), hi, ""})
		}
		rows = append(rows,
			[]string{"queued", "total", "estimate", "", money(q.Dollars), ""},
			[]string{"queued", "total", "low", "", money(q.Low), ""},
			[]string{"queued", "total", "high", "", money(q.High), ""},
			[]string{"queued", "unknown", "", strconv.Itoa(q.Unknown), "", ""},
			[]string{"queued", "untyped", "", strconv.Itoa(q.Untyped), "", ""})
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// costCell is the COST of ls containers -o wide: costs[i] in dollars, "-"
// when the server sent none (an older one).
func costCell(costs []float64, i int) string {
	if i >= len(costs) {
		return "-"
	}
	return dollars(costs[i])
}
