// ls: the listings of instances, containers and types, and their output formats.

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// outputs are the -o formats of ls.
var outputs = []string{"table", "wide", "json", "yaml", "name"}

// listFlags are the flags every ls command takes.
type listFlags struct {
	output    string
	noHeaders bool
	watch     bool
}

// listing is one ls command: fetch gets the items; it returns the API's
// list object (for json/yaml), the names (for -o name) and the table.
type listing func(ctx context.Context, c *api.Client) (obj any, names []string, t *table, footer []string, err error)

func listCmd(env *Env) *cobra.Command {
	ls := &cobra.Command{
		Use:   "ls instances|containers|types|events|nodes",
		Short: "List instances, containers, instance types, events or the cluster's nodes",
		Long: `List what the dispatcher knows. Tables fit the terminal ($COLUMNS, else its
width) without ever cutting an id: free text is cut first, then the least
useful columns are dropped. -o wide shows every column, uncut: on a terminal
too narrow for that table, each row is printed as a record, one "COLUMN value"
line per column. Piped, nothing is cut.`,
		Example: `  dispatch-tui ls containers --state Queued,Running
  dispatch-tui ls instances -o name | xargs dispatch-tui hold --reason maintenance
  dispatch-tui ls containers -l team=genomics -o yaml
  dispatch-tui ls events -w`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("what to list: ls instances|containers|types|events|nodes")
			}
			return usagef("cannot list %q: instances, containers, types, events or nodes", args[0])
		},
	}
	ls.AddCommand(lsInstancesCmd(env), lsContainersCmd(env), lsTypesCmd(env), lsEventsCmd(env), lsNodesCmd(env))
	return ls
}

// newListCmd makes an ls sub-command with the common flags.
func newListCmd(env *Env, use string, aliases []string, short string, run func(lf *listFlags) listing) (*cobra.Command, *listFlags) {
	lf := &listFlags{}
	cmd := &cobra.Command{
		Use: use, Aliases: aliases, Short: short, Args: noArgs,
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !slices.Contains(outputs, lf.output) {
			return usagef("-o must be one of %s", strings.Join(outputs, ", "))
		}
		c, err := client(env)
		if err != nil {
			return err
		}
		return show(cmd.Context(), env, c, lf, run(lf))
	}
	f := cmd.Flags()
	f.StringVarP(&lf.output, "output", "o", "table", "output format: "+strings.Join(outputs, ", "))
	f.BoolVar(&lf.noHeaders, "no-headers", false, "tables without the header line and notes")
	f.BoolVarP(&lf.watch, "watch", "w", false, "keep watching: after the listing, print only what changes (new and changed rows; Ctrl-C stops)")
	cmd.RegisterFlagCompletionFunc("output", fixedCompletion(outputs...))
	return cmd, lf
}

// storeWarning is the line ls prints on stderr while the daemon's store
// cannot write, "" while it can. A summary that cannot be read says
// nothing: the listing is what was asked for, and it was read.
func storeWarning(ctx context.Context, c *api.Client) string {
	sum, err := c.Summary(ctx)
	if err != nil || sum.StoreStatus() == "" {
		return ""
	}
	return "warning: " + termsafe.Escape(sum.StoreStatus()) + "\n"
}

// tableWidth is $COLUMNS, else the terminal's width, else 0 (no limit).
func tableWidth(env *Env) int {
	if n, err := strconv.Atoi(env.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if env.TermWidth != nil {
		return env.TermWidth()
	}
	return 0
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeYAML prints v as YAML with the JSON field names.
func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func lsInstancesCmd(env *Env) *cobra.Command {
	var states []string
	var types []string
	cmd, _ := newListCmd(env, "instances", []string{"instance", "inst"}, "List instances", func(_ *listFlags) listing {
		return func(ctx context.Context, c *api.Client) (any, []string, *table, []string, error) {
			v, err := c.Instances(ctx)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			v = slices.DeleteFunc(v, func(i view.Instance) bool {
				return len(states) > 0 && !slices.Contains(states, string(i.State)) || len(types) > 0 && !slices.Contains(types, i.Type)
			})
			names := make([]string, 0, len(v))
			for _, i := range v {
				if i.ID != "" {
					names = append(names, string(i.ID))
				}
			}
			return map[string]any{"items": v}, names, instanceTable(v, env.now()), nil, nil
		}
	})
	cmd.Example = `  dispatch-tui ls instances --state idle -o name
  dispatch-tui ls instances --type slot8 -o wide`
	cmd.Flags().StringSliceVar(&states, "state", nil, "only instances in these states (comma-separated or repeated)")
	cmd.Flags().StringSliceVar(&types, "type", nil, "only instances of these types (comma-separated or repeated)")
	cmd.RegisterFlagCompletionFunc("state", listCompletion(fixedValues(instanceStates...)))
	cmd.RegisterFlagCompletionFunc("type", listCompletion(typeNames(env)))
	cmd.PreRunE = func(*cobra.Command, []string) error { return checkStates(states, instanceStates) }
	return cmd
}

// checkStates makes a state that is not one of known (any case) a usage
// error, before anything is asked of the server.
func checkStates(states, known []string) error {
	for _, st := range states {
		if !slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, st) }) {
			return usagef("--state %q: want one of %s", st, strings.Join(known, ", "))
		}
	}
	return nil
}

// containerListFlags are the filters and paging of ls containers.
type containerListFlags struct {
	q         api.ListQuery
	labels    []string
	chunkSize int
}

func lsContainersCmd(env *Env) *cobra.Command {
	cf := &containerListFlags{}
	cmd, _ := newListCmd(env, "containers", []string{"container", "ctr"}, "List containers", func(_ *listFlags) listing {
		return func(ctx context.Context, c *api.Client) (any, []string, *table, []string, error) {
			items, costs, avail, err := listContainers(ctx, c, cf)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			names := make([]string, len(items))
			withCost := make([]api.ContainerItem, len(items))
			for i, ct := range items {
				names[i] = ct.ID
				withCost[i] = api.ContainerItem{Container: ct, Cost: costs[i]}
			}
			t, footer := containerTable(items, costs, avail, env.now())
			return map[string]any{"items": withCost, "items_available": avail}, names, t, footer, nil
		}
	})
	cmd.Example = `  dispatch-tui ls containers --state Queued --sort -priority
  dispatch-tui ls containers -l team=genomics -l stage=align
  dispatch-tui ls containers --chunk-size 0 -o json   # one request`
	f := cmd.Flags()
	f.StringSliceVar(&cf.q.States, "state", nil, "only these states (comma-separated or repeated): "+strings.Join(containerStates, ", "))
	f.StringVar(&cf.q.Q, "q", "", "only containers whose id, name or command contains this")
	f.StringVar(&cf.q.Sort, "sort", "", "sort: priority, created, name, state; a leading - reverses")
	f.IntVar(&cf.q.Limit, "limit", 0, "at most this many (0 = all)")
	f.IntVar(&cf.q.Offset, "offset", 0, "skip this many")
	f.StringArrayVarP(&cf.labels, "label", "l", nil, "only containers with label `KEY=VALUE` (metadata; repeatable: all must match)")
	f.IntVar(&cf.chunkSize, "chunk-size", 500, "fetch this many per request, following the server's continue token (0 = one request)")
	cmd.RegisterFlagCompletionFunc("state", listCompletion(fixedValues(containerStates...)))
	var sorts []string
	for _, k := range api.ListSorts {
		sorts = append(sorts, k, "-"+k)
	}
	cmd.RegisterFlagCompletionFunc("sort", fixedCompletion(sorts...))
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if err := checkStates(cf.q.States, containerStates); err != nil {
			return err
		}
		if s := cf.q.Sort; s != "" && !slices.Contains(sorts, s) {
			return usagef("--sort %q: want one of %s (a leading - reverses)", s, strings.Join(api.ListSorts, ", "))
		}
		if cf.q.Limit < 0 || cf.q.Offset < 0 || cf.chunkSize < 0 {
			return usagef("--limit, --offset and --chunk-size must not be negative")
		}
		for _, l := range cf.labels {
			if k, _, ok := strings.Cut(l, "="); !ok || k == "" {
				return usagef("--label wants KEY=VALUE, got %q", l)
			}
		}
		return nil
	}
	return cmd
}

// listContainers gets the containers cf selects, --chunk-size at a time:
// it follows the server's continue token, or (from a server without
// one) the offset, until --limit or the end.
func listContainers(ctx context.Context, c *api.Client, cf *containerListFlags) ([]view.Container, []float64, int, error) {
	var all []view.Container
	var costs []float64
	avail := 0
	q := cf.q
	cont := ""
	for {
		q.Limit = cf.chunkSize
		if left := cf.q.Limit - len(all); cf.q.Limit > 0 && (q.Limit == 0 || left < q.Limit) {
			q.Limit = left
		}
		q.Labels = cf.labels
		page, err := c.ListContainerPage(ctx, q, cont)
		if err != nil {
			return nil, nil, 0, err
		}
		all = append(all, page.Items...)
		costs = append(costs, page.Costs...)
		avail = max(avail, page.Available)
		switch {
		case cf.chunkSize == 0 || len(page.Items) == 0 || cf.q.Limit > 0 && len(all) >= cf.q.Limit:
			return all, costs, max(avail, len(all)), nil
		case page.Continue != "":
			cont = page.Continue
		case avail > cf.q.Offset+len(all) && cont == "":
			q.Offset = cf.q.Offset + len(all)
		default:
			return all, costs, max(avail, len(all)), nil
		}
	}
}

func lsTypesCmd(env *Env) *cobra.Command {
	cmd, _ := newListCmd(env, "types", []string{"type"}, "List the configured instance types", func(_ *listFlags) listing {
		return func(ctx context.Context, c *api.Client) (any, []string, *table, []string, error) {
			v, err := c.Types(ctx)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			names := make([]string, len(v))
			for i, t := range v {
				names[i] = t.Name
			}
			// The note names the store the queue is kept in; a summary that
			// cannot be read leaves it out (the listing was read).
			var footer []string
			if sum, err := c.Summary(ctx); err == nil && sum.Store != "" {
				footer = append(footer, "store: "+sum.StoreName())
			}
			return map[string]any{"items": v}, names, typeTable(v), footer, nil
		}
	})
	return cmd
}

func lsEventsCmd(env *Env) *cobra.Command {
	var ef eventFlags
	cmd, _ := newListCmd(env, "events", []string{"event"}, "List the event log, newest first", func(_ *listFlags) listing {
		return func(ctx context.Context, c *api.Client) (any, []string, *table, []string, error) {
			evs, avail, footer, err := listEvents(ctx, c, &ef, env.now())
			if err != nil {
				return nil, nil, nil, nil, err
			}
			names := make([]string, len(evs))
			for i, e := range evs {
				names[i] = strconv.FormatUint(e.Seq, 10)
			}
			return map[string]any{"items": evs, "items_available": avail}, names, eventTable(evs), footer, nil
		}
	})
	cmd.Long = `List the event log, newest first: the newest --limit events (1000; 0 = all)
after --since, which is an event's sequence number or a duration (10m: the last
ten minutes). When more match, a last line says how many, and --before SEQ
lists the older ones. With -w, new events are printed as they come.`
	cmd.Example = `  dispatch-tui ls events --since 10m
  dispatch-tui ls events --limit 50 --before 1200
  dispatch-tui ls events -w`
	cmd.Flags().StringVar(&ef.since, "since", "", "only events after this sequence number, or in the last `SEQ|DURATION` (e.g. 10m)")
	cmd.Flags().Uint64Var(&ef.before, "before", 0, "only events before this sequence number (the older page)")
	cmd.Flags().IntVar(&ef.limit, "limit", 1000, "at most this many, the newest (0 = all)")
	cmd.PreRunE = func(*cobra.Command, []string) error { return ef.check() }
	return cmd
}

// ---- the tables ----

func instanceTable(items []view.Instance, now time.Time) *table {
	t := &table{cols: []column{
		{name: "ID"}, {name: "TYPE", drop: 4}, {name: "STATE"}, {name: "IDLE", drop: 3}, {name: "CTRS", drop: 7},
		{name: "PRICE/H", drop: 9}, {name: "AGE", drop: 8, clock: true}, {name: "LAST ERROR", flex: true, min: 12, drop: 6},
		{name: "ADDRESS", wide: true}, {name: "PROVIDER TYPE", wide: true}, {name: "LAST CONTAINER", wide: true},
	}}
	for _, v := range items {
		id := string(v.ID)
		if id == "" {
			id = "(creating)"
		}
		t.add(termsafe.Escape(id), termsafe.Escape(v.Type), string(v.State), string(v.IdleBehavior), strconv.Itoa(len(v.Containers)),
			fmt.Sprintf("%.3f", v.Price), ago(now, v.Created()), instanceError(v),
			dash(termsafe.Escape(v.Address)), dash(termsafe.Escape(v.ProviderType)), dash(termsafe.Escape(v.LastContainer)))
	}
	return t
}

// instanceError is the LAST ERROR column: an unreachable instance reads
// "unreachable since 15:04:05: <error>", so that a partition is seen
// without -o json.
func instanceError(v view.Instance) string {
	if v.UnreachableSince.IsZero() {
		return termsafe.Escape(v.LastError)
	}
	return termsafe.Escape("unreachable since " + v.UnreachableSince.Local().Format(time.TimeOnly) + ": " + v.LastError)
}

// heldLegend explains the * after a held container's state.
const heldLegend = "* held: not scheduled until released (dispatch-tui release ID)"

func containerTable(items []view.Container, costs []float64, available int, now time.Time) (*table, []string) {
	t := &table{cols: []column{
		{name: "ID"}, {name: "STATE"}, {name: "PRIO", drop: 4}, {name: "EXIT", drop: 5}, {name: "INSTANCE", drop: 3},
		{name: "COMMAND / REASON", flex: true, min: 12, drop: 9},
		{name: "NAME", wide: true}, {name: "TYPE", wide: true}, {name: "ATTEMPTS", wide: true}, {name: "AGE", wide: true, clock: true},
		{name: "COST", wide: true, clock: true},
		{name: "LABELS", wide: true, flex: true, min: 8}, {name: "CONSTRAINTS", wide: true, flex: true, min: 8},
	}}
	held := false
	for i, c := range items {
		exit := "-"
		if c.ExitCode != nil {
			exit = strconv.Itoa(*c.ExitCode)
		}
		state := string(c.State)
		if c.Held {
			state += "*"
			held = true
		}
		detail := strings.Join(c.Command, " ")
		if c.Reason != "" {
			detail = c.Reason
		}
		t.add(termsafe.Escape(c.ID), state, strconv.Itoa(c.Priority), exit, dash(termsafe.Escape(c.InstanceID)), termsafe.Escape(detail),
			dash(termsafe.Escape(c.Name)), dash(termsafe.Escape(c.InstanceType)), strconv.Itoa(c.Attempts), ago(now, c.CreatedAt),
			costCell(costs, i), dash(termsafe.Escape(labelString(c.Labels))), dash(termsafe.Escape(labelString(c.Scheduling.Constraints))))
	}
	var footer []string
	if held {
		footer = append(footer, heldLegend)
	}
	if available > len(items) {
		footer = append(footer, fmt.Sprintf("(%d of %d shown; use --limit/--offset)", len(items), available))
	}
	return t, footer
}

func labelString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}

func typeTable(items []view.TypeSummary) *table {
	t := &table{cols: []column{
		{name: "NAME"}, {name: "VCPUS"}, {name: "RAM"}, {name: "SCRATCH", drop: 3}, {name: "GPUS", drop: 4},
		{name: "PRICE/H"}, {name: "INSTANCES", drop: 2}, {name: "PROVIDER TYPE", wide: true}, {name: "PREEMPTIBLE", wide: true},
	}}
	for _, v := range items {
		t.add(termsafe.Escape(v.Name), strconv.Itoa(v.VCPUs), view.FormatSize(v.RAM), view.FormatSize(v.Scratch),
			strconv.Itoa(v.GPUs), fmt.Sprintf("%.3f", v.Price), strconv.Itoa(v.Count),
			dash(termsafe.Escape(v.ProviderType)), strconv.FormatBool(v.Preemptible))
	}
	return t
}

func eventTable(items []view.Event) *table {
	t := &table{cols: []column{
		{name: "SEQ"}, {name: "TIME", drop: 5}, {name: "ACTOR", flex: true, min: 10, drop: 6}, {name: "TARGET"},
		{name: "ACTION", flex: true, min: 8}, {name: "REASON", flex: true, min: 12, drop: 9}, {name: "KIND", wide: true},
	}}
	for _, e := range items {
		t.add(strconv.FormatUint(e.Seq, 10), e.Time.Local().Format(time.TimeOnly), termsafe.Escape(e.Actor),
			termsafe.Escape(e.Target), termsafe.Escape(e.Action), termsafe.Escape(e.Reason), termsafe.Escape(e.Kind))
	}
	return t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}
