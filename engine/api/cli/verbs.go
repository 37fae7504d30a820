package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/termsafe"
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

// verbHelp says what each verb does to instances and containers.
var verbHelp = map[string][2]string{
	"hold":    {"Hold instances (no new containers, never shut down) or containers (not scheduled)", "INSTANCE|CONTAINER..."},
	"drain":   {"Drain instances: no new containers, shut down once idle", "INSTANCE..."},
	"run":     {"Return held or draining instances to normal", "INSTANCE..."},
	"kill":    {"Kill instances (their containers are requeued) or containers (cancelled)", "INSTANCE|CONTAINER..."},
	"release": {"Release held containers", "CONTAINER..."},
}

// verbCmd is hold, drain, run, kill or release. An id of the form "c-" +
// 16 hex digits is a container; anything else is an instance.
func verbCmd(env *Env, name string) *cobra.Command {
	var reason string
	h := verbHelp[name]
	cmd := &cobra.Command{
		Use:   name + " [flags] " + h[1],
		Short: h[0],
		Long: h[0] + `.
An id of the form c- and 16 hex digits is a container; anything else is an
instance. Each id is tried; the exit code is 1 if any failed.`,
		Example: fmt.Sprintf(`  dispatch-tui %s --reason "disk check" host-10-231-0-1
  dispatch-tui ls instances --state idle -o name | xargs dispatch-tui %s`, name, name),
		Args:              minArgs(1, "at least one id: dispatch-tui "+name+" "+h[1]),
		ValidArgsFunction: completeIDs(env, name),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Check every id before acting on any.
			for _, id := range args {
				container := isContainerID(id)
				switch {
				case !container && strings.HasPrefix(id, "c-"):
					return usagef("%s looks like a container id but is not one (c- and 16 hex digits; see ls containers)", id)
				case container && (name == "drain" || name == "run"):
					return usagef("%s applies to instances; %s is a container", name, id)
				case !container && name == "release":
					return usagef("release applies to containers; %s is not a container id", id)
				}
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var failed []string
			for _, id := range args {
				var what, state string
				if isContainerID(id) {
					what = "container"
					got, err := c.ContainerVerb(ctx, id, name, reason)
					if err != nil {
						fmt.Fprintf(env.Stderr, "container %s: %s\n", termsafe.Escape(id), ErrorText(explain(c, err)))
						failed = append(failed, id)
						continue
					}
					state = string(got.State)
					if got.Held {
						state += " (held)"
					}
				} else {
					what = "instance"
					got, err := c.InstanceVerb(ctx, id, name, reason)
					if err != nil {
						fmt.Fprintf(env.Stderr, "instance %s: %s\n", termsafe.Escape(id), ErrorText(explain(c, err)))
						failed = append(failed, id)
						continue
					}
					state = string(got.State) + " " + string(got.IdleBehavior)
				}
				fmt.Fprintf(env.Stdout, "%s\t%s\t%s %s\n", termsafe.Escape(id), name, what, termsafe.Escape(state))
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d failed: %s", len(failed), len(args), strings.Join(failed, " "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the event log)")
	return cmd
}

func priorityCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:               "priority CONTAINER N",
		Short:             "Set a container's priority (higher first; 0 = do not schedule)",
		Example:           `  dispatch-tui priority c-38613a4f0b33d3d6 10`,
		Args:              exactArgs(2, "CONTAINER N"),
		ValidArgsFunction: completeIDs(env, "priority"),
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
	cmd := &cobra.Command{
		Use:   "logs [flags] CONTAINER",
		Short: "Print a container's output",
		Example: `  dispatch-tui logs c-38613a4f0b33d3d6 --tail 100
  dispatch-tui logs -f c-38613a4f0b33d3d6`,
		Args:              exactArgs(1, "one CONTAINER"),
		ValidArgsFunction: completeIDs(env, "logs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 {
				return usagef("--tail must not be negative")
			}
			c, err := client(env)
			if err != nil {
				return err
			}
			if err := c.Logs(cmd.Context(), args[0], tail, follow, env.Stdout); err != nil {
				return explain(c, err)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&tail, "tail", 0, "only the last N lines (0 = all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the container ends")
	return cmd
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
