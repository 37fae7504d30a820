// Shell completion of ids and types, asked of the running daemon.

package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// Shell completion asks the running daemon for ids and types; it gives up
// quietly (no candidates) when the daemon cannot be reached in time.

const completionTimeout = 3 * time.Second

// completionLimit bounds the containers one completion lists.
const completionLimit = 1000

var (
	instanceStates  = []string{"booting", "idle", "running", "shutdown", "unknown", "foreign", "refused"}
	containerStates = []string{string(view.Queued), string(view.Locked), string(view.Running), string(view.Complete), string(view.Cancelled)}
	liveStates      = []string{string(view.Queued), string(view.Locked), string(view.Running)}
)

// completionValues produces candidates ("value\tdescription") for what is
// typed so far.
type completionValues func(ctx context.Context, toComplete string) []string

func fixedValues(vs ...string) completionValues {
	return func(context.Context, string) []string { return vs }
}

// fixedCompletion completes a flag from a fixed list.
func fixedCompletion(vs ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(vs, toComplete, nil), cobra.ShellCompDirectiveNoFileComp
	}
}

// listCompletion completes a comma-separated list flag: the values not
// given yet, after what is typed up to the last comma.
func listCompletion(values completionValues) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		var out []string
		for _, v := range withPrefix(values(ctx, last), last, strings.Split(done, ",")) {
			out = append(out, done+v)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// typeNames lists the daemon's instance types.
func typeNames(env *Env) completionValues {
	return func(ctx context.Context, _ string) []string {
		c, err := client(env)
		if err != nil {
			return nil
		}
		ts, err := c.Types(ctx)
		if err != nil {
			cobra.CompDebugln("types: "+err.Error(), false)
			return nil
		}
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
}

// completeIDs completes the ids command (a verb, or logs) applies to, from
// the daemon: instances for the instance verbs; containers that are not
// final for the container verbs, held ones for release; any for logs.
func completeIDs(env *Env, command string) cobra.CompletionFunc {
	_, instErr := view.ParseInstanceVerb(command)
	ctrVerb, ctrErr := view.ParseContainerVerb(command)
	forInstances, forContainers := instErr == nil, ctrErr == nil || command == "logs"
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if (ctrVerb.TakesValue() || command == "logs") && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := client(env)
		if err != nil {
			cobra.CompDebugln("client: "+err.Error(), false)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		var out []string
		if forInstances {
			out = append(out, instanceCandidates(ctx, c)...)
		}
		if forContainers && (toComplete == "" || strings.HasPrefix("c-", toComplete) || strings.HasPrefix(toComplete, "c-")) {
			out = append(out, containerCandidates(ctx, c, command, toComplete)...)
		}
		return withPrefix(out, toComplete, args), cobra.ShellCompDirectiveNoFileComp
	}
}

func instanceCandidates(ctx context.Context, c *api.Client) []string {
	insts, err := c.Instances(ctx)
	if err != nil {
		cobra.CompDebugln("instances: "+err.Error(), false)
		return nil
	}
	var out []string
	for _, i := range insts {
		if i.ID != "" && i.State != "foreign" {
			out = append(out, string(i.ID)+"\t"+i.Type+" "+string(i.State)+" "+string(i.IdleBehavior))
		}
	}
	return out
}

func containerCandidates(ctx context.Context, c *api.Client, command, toComplete string) []string {
	q := api.ListQuery{Limit: completionLimit, Sort: "-created"}
	if command != "logs" {
		q.States = liveStates
	}
	if len(toComplete) > 2 {
		q.Q = toComplete
	}
	p, err := c.ListContainerPage(ctx, q, "")
	if err != nil {
		cobra.CompDebugln("containers: "+err.Error(), false)
		return nil
	}
	var out []string
	for _, ct := range p.Items {
		if command == view.ContainerRelease.String() && !ct.Held {
			continue
		}
		desc := string(ct.State)
		if ct.Held {
			desc += " held"
		}
		if ct.Name != "" {
			desc += " " + ct.Name
		}
		out = append(out, ct.ID+"\t"+desc)
	}
	return out
}

// withPrefix keeps the candidates that start with prefix and are not in
// given.
func withPrefix(cands []string, prefix string, given []string) []string {
	var out []string
	for _, c := range cands {
		v, _, _ := strings.Cut(c, "\t")
		if strings.HasPrefix(v, prefix) && !slices.Contains(given, v) {
			out = append(out, c)
		}
	}
	return out
}
