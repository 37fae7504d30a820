package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/worker"
)

// Every string cell of these tables is escaped (termsafe, through clip or
// directly): they are printed to a terminal. -o json prints values as they
// are.

func instanceTable(w io.Writer, items []worker.InstanceView) error {
	t := tw(w)
	fmt.Fprintln(t, "ID\tTYPE\tSTATE\tIDLE\tCTRS\tPRICE/H\tAGE\tLAST ERROR")
	for _, v := range items {
		id := string(v.ID)
		if id == "" {
			id = "(creating)"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%d\t%.3f\t%s\t%s\n", termsafe.Escape(id), termsafe.Escape(v.Type), v.State, v.IdleBehavior,
			len(v.Containers), v.Price, ago(v.AppearedAt), instanceError(v))
	}
	return t.Flush()
}

// instanceError is the LAST ERROR column: an unreachable instance reads
// "unreachable since 15:04:05: <error>", so that a partition is seen
// without -o json.
func instanceError(v worker.InstanceView) string {
	if v.UnreachableSince.IsZero() {
		return clip(v.LastError, 40)
	}
	return clip("unreachable since "+v.UnreachableSince.Local().Format(time.TimeOnly)+": "+v.LastError, 80)
}

func containerTable(w io.Writer, items []queue.Container, available int) error {
	t := tw(w)
	fmt.Fprintln(t, "ID\tSTATE\tPRIO\tEXIT\tINSTANCE\tCOMMAND / REASON")
	for _, c := range items {
		exit := "-"
		if c.ExitCode != nil {
			exit = fmt.Sprint(*c.ExitCode)
		}
		state := string(c.State)
		if c.Held {
			state += "*"
		}
		inst := c.InstanceID
		if inst == "" {
			inst = "-"
		}
		detail := strings.Join(c.Command, " ")
		if c.Reason != "" {
			detail = c.Reason
		}
		fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\t%s\n", termsafe.Escape(c.ID), state, c.Priority, exit, clip(inst, 16), clip(detail, 28))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if available > len(items) {
		fmt.Fprintf(w, "(%d of %d shown; use --limit/--offset)\n", len(items), available)
	}
	return nil
}

func typeTable(w io.Writer, items []engine.TypeSummary) error {
	t := tw(w)
	fmt.Fprintln(t, "NAME\tVCPUS\tRAM\tSCRATCH\tGPUS\tPRICE/H\tINSTANCES")
	for _, v := range items {
		fmt.Fprintf(t, "%s\t%d\t%s\t%s\t%d\t%.3f\t%d\n", termsafe.Escape(v.Name), v.VCPUs, config.FormatSize(v.RAM),
			config.FormatSize(v.Scratch), v.GPUs, v.Price, v.Count)
	}
	return t.Flush()
}

func eventTable(w io.Writer, items []queue.Event) error {
	t := tw(w)
	fmt.Fprintln(t, "SEQ\tTIME\tACTOR\tTARGET\tACTION\tREASON")
	for _, e := range items {
		fmt.Fprintf(t, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.Local().Format("15:04:05"),
			clip(e.Actor, 12), clip(e.Target, 18), clip(e.Action, 10), clip(e.Reason, 16))
	}
	return t.Flush()
}
