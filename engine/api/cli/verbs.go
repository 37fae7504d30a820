// The verb commands (hold, drain, kill, priority, logs, pause...) on one or more ids.

package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// isContainerID tells container ids ("c-" + 16 hex) from instance ids.
func isContainerID(id string) bool {
	if len(id) != 18 || !strings.HasPrefix(id, "c-") {
		return false
	}
	for _, r := range id[2:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// verbHelp says what each verb command does to instances and containers,
// by the verbs' names.
var verbHelp = map[string][2]string{
	view.InstanceHold.String():     {"Hold instances (no new containers, never shut down) or containers (not scheduled)", "INSTANCE|CONTAINER..."},
	view.InstanceDrain.String():    {"Drain instances: no new containers, shut down once idle", "INSTANCE..."},
	view.InstanceRun.String():      {"Return held or draining instances to normal", "INSTANCE..."},
	view.InstanceKill.String():     {"Kill instances (their containers are requeued) or containers (cancelled)", "INSTANCE|CONTAINER..."},
	view.ContainerRelease.String(): {"Release held containers", "CONTAINER..."},
}

// verbNames are the verb commands: the instance verbs, then the container
// verbs without a value (priority, which takes one, is its own command).
func verbNames() []string {
	var names []string
	for _, v := range view.InstanceVerbs {
		names = append(names, v.String())
	}
	for _, v := range view.ContainerVerbs {
		if !v.TakesValue() && !slices.Contains(names, v.String()) {
			names = append(names, v.String())
		}
	}
	return names
}

// verbCmd is hold, drain, run, kill or release: the instance verb and the
// container verb of that name, read once here. An id of the form "c-" +
// 16 hex digits is a container; anything else is an instance. Container
// ids, or a selector, go through bulk requests (bulk.go); instance ids one
// request each.
func verbCmd(env *Env, name string) *cobra.Command {
	var reason string
	var sel selectorFlags
	h := verbHelp[name]
	instVerb, _ := view.ParseInstanceVerb(name) // 0: none of that name
	ctrVerb, _ := view.ParseContainerVerb(name)
	forContainers := ctrVerb != 0
	cmd := &cobra.Command{
		Use:   name + " [flags] " + h[1],
		Short: h[0],
		Long: h[0] + `.
An id of the form c- and 16 hex digits is a container; anything else is an
instance. Each id is tried; the exit code is 1 if any failed.`,
		Example: fmt.Sprintf(`  dispatch-tui %s --reason "disk check" host-10-231-0-1
  dispatch-tui ls instances --state idle -o name | xargs dispatch-tui %s`, name, name),
		ValidArgsFunction: completeIDs(env, name),
		RunE: func(cmd *cobra.Command, args []string) error {
			args, err := readIDs(args, env.Stdin)
			if err != nil {
				return err
			}
			switch {
			case sel.set() && len(args) > 0:
				return usagef("give ids or a selector (--selector, --state, --q), not both")
			case !sel.set() && len(args) == 0 && forContainers:
				return usagef("want at least one id (or - to read them from stdin), or a selector: dispatch-tui %s %s", name, h[1])
			case len(args) == 0 && !sel.set():
				return usagef("want at least one id (or - to read them from stdin): dispatch-tui %s %s", name, h[1])
			}
			// Check every id before acting on any.
			var ctrs, insts []string
			for _, id := range args {
				container := isContainerID(id)
				switch {
				case !container && strings.HasPrefix(id, "c-"):
					return usagef("%s looks like a container id but is not one (c- and 16 hex digits; see ls containers)", id)
				case container && !forContainers:
					return usagef("%s applies to instances; %s is a container", name, id)
				case !container && instVerb == 0:
					return usagef("%s applies to containers; %s is not a container id", name, id)
				case container:
					ctrs = append(ctrs, id)
				default:
					insts = append(insts, id)
				}
			}
			var selector *api.Selector
			if sel.set() {
				if selector, err = sel.selector(); err != nil {
					return err
				}
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			run := &bulkRun{env: env, c: c, verb: ctrVerb, reason: reason, progress: env.StderrTerminal != nil && env.StderrTerminal()}
			for _, id := range insts {
				run.done++
				got, err := c.InstanceVerb(ctx, id, instVerb, reason)
				if err != nil {
					fmt.Fprintf(env.Stderr, "instance %s: %s\n", termsafe.Escape(id), ErrorText(unnamed(explain(c, err), "instance "+id+": ")))
					run.fail(id, err)
					continue
				}
				fmt.Fprintf(env.Stdout, "%s\t%s\tinstance %s\n", termsafe.Escape(id), name, termsafe.Escape(string(got.State)+" "+string(got.IdleBehavior)))
			}
			switch {
			case selector != nil:
				err = run.selected(ctx, selector)
			case len(ctrs) > 0:
				err = run.ids(ctx, ctrs)
			}
			if err != nil {
				run.clearProgress()
				return err
			}
			return run.result()
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the event log)")
	if forContainers {
		sel.bind(cmd)
		cmd.Example += fmt.Sprintf(`
  dispatch-tui %s -l team=genomics --state Queued
  dispatch-tui ls containers --q nightly -o name | dispatch-tui %s -`, name, name)
	}
	return cmd
}

func priorityCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:               "priority CONTAINER N",
		Short:             "Set a container's priority (higher first; 0 = do not schedule)",
		Example:           `  dispatch-tui priority c-38613a4f0b33d3d6 10`,
		Args:              exactArgs(2, "CONTAINER N"),
		ValidArgsFunction: completeIDs(env, view.ContainerPriority.String()),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				return usagef("priority must be a whole number >= 0, got %q", args[1])
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			got, err := c.SetPriority(cmd.Context(), args[0], n)
			if err != nil {
				return explain(c, err)
			}
			fmt.Fprintf(env.Stdout, "%s\tpriority %d\t%s\n", termsafe.Escape(got.ID), got.Priority, termsafe.Escape(string(got.State)))
			return nil
		},
	}
}

func logsCmd(env *Env) *cobra.Command {
	var tail int
	var follow bool
	var sel selectorFlags
	cmd := &cobra.Command{
		Use:   "logs [flags] CONTAINER | logs -l KEY=VALUE [--state S] [--q TEXT]",
		Short: "Print a container's output, or that of each container a selector matches",
		Example: `  dispatch-tui logs c-38613a4f0b33d3d6 --tail 100
  dispatch-tui logs -f c-38613a4f0b33d3d6
  dispatch-tui logs -l workflow=wf-7 --state Complete --tail 20`,
		ValidArgsFunction: completeIDs(env, "logs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case tail < 0:
				return usagef("--tail must not be negative")
			case sel.set() && (len(args) > 0 || follow):
				return usagef("a selector prints the logs of each container it matches: give no CONTAINER and no --follow")
			case !sel.set() && len(args) != 1:
				return usagef("want one CONTAINER, or a selector (--selector/-l, --state, --q)")
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			if sel.set() {
				return logsSelected(cmd.Context(), env, c, &sel, tail)
			}
			if follow {
				// Following one that has not started waits: say for what.
				if got, err := c.Container(cmd.Context(), args[0]); err == nil && (got.State == view.Queued || got.State == view.Locked) {
					why := ""
					if got.Reason != "" {
						why = ": " + got.Reason
					}
					fmt.Fprintf(env.Stderr, "waiting for %s to start (%s%s); Ctrl-C stops\n", termsafe.Escape(got.ID), got.State, termsafe.Escape(why))
				}
			}
			if err := c.Logs(cmd.Context(), args[0], tail, follow, env.Stdout); err != nil {
				return explain(c, err)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&tail, "tail", 0, "only the last N lines (0 = all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the container ends")
	sel.bind(cmd)
	return cmd
}

// logsSelected prints the output of each container sel matches, in
// submission order, each under a "==> ID (NAME) <==" line as tail does
// for several files; one that has none says why on stderr.
func logsSelected(ctx context.Context, env *Env, c *api.Client, sf *selectorFlags, tail int) error {
	sel, err := sf.selector()
	if err != nil {
		return err
	}
	q := api.ListQuery{States: sel.State, Q: sel.Q, Limit: 500, Labels: sel.Label}
	cont, failed, n := "", 0, 0
	for {
		page, err := c.ListContainerPage(ctx, q, cont)
		if err != nil {
			return explain(c, err)
		}
		for _, ct := range page.Items {
			n++
			fmt.Fprintf(env.Stdout, "==> %s (%s) <==\n", termsafe.Escape(ct.ID), termsafe.Escape(ct.Name))
			if err := c.Logs(ctx, ct.ID, tail, false, env.Stdout); err != nil {
				fmt.Fprintf(env.Stderr, "container %s: %s\n", termsafe.Escape(ct.ID), ErrorText(unnamed(explain(c, err), "container "+ct.ID+": ")))
				failed++
			}
		}
		if cont = page.Continue; cont == "" || len(page.Items) == 0 {
			break
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d containers had no output to show", failed, n)
	}
	return nil
}

func pauseCmd(env *Env, name string) *cobra.Command {
	var reason string
	short := "Stop starting containers and creating instances (running work continues)"
	if name == "resume" {
		short = "Start scheduling again after pause"
	}
	cmd := &cobra.Command{
		Use:     name + " [flags]",
		Short:   short,
		Example: fmt.Sprintf(`  dispatch-tui %s --reason "quota review"`, name),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client(env)
			if err != nil {
				return err
			}
			if name == "pause" {
				err = c.Pause(cmd.Context(), reason)
			} else {
				err = c.Resume(cmd.Context(), reason)
			}
			if err != nil {
				return explain(c, err)
			}
			fmt.Fprintf(env.Stdout, "scheduler %sd\n", name)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the event log)")
	return cmd
}
