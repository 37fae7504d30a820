// Container verbs on many containers at once: ids or a selector, sent as bulk requests.

package cli

// Container verbs on many containers: ids (arguments, or read from stdin
// with "-") or a selector, sent as bulk requests (POST /v1/containers/bulk,
// api.MaxBatchItems a request), with progress on a terminal's stderr.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// selectorFlags are the selector of hold, release and kill: the filters of
// ls containers.
type selectorFlags struct {
	labels []string // KEY=VALUE, each may hold several joined by commas
	states []string
	q      string
}

func (s *selectorFlags) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVarP(&s.labels, "selector", "l", nil, "containers with label `KEY=VALUE` (repeatable or comma-separated: all must match)")
	f.StringSliceVar(&s.states, "state", nil, "containers in these states (comma-separated or repeated): "+strings.Join(containerStates, ", "))
	f.StringVar(&s.q, "q", "", "containers whose id, name or command contains this")
	cmd.RegisterFlagCompletionFunc("state", listCompletion(fixedValues(containerStates...)))
}

func (s *selectorFlags) set() bool { return len(s.labels) > 0 || len(s.states) > 0 || s.q != "" }

// selector checks the flags and returns the API's selector.
func (s *selectorFlags) selector() (*api.Selector, error) {
	if err := checkStates(s.states, containerStates); err != nil {
		return nil, err
	}
	sel := &api.Selector{State: s.states, Q: s.q}
	for _, l := range s.labels {
		for _, kv := range strings.Split(l, ",") {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return nil, usagef("--selector wants KEY=VALUE, got %q", kv)
			}
			sel.Label = append(sel.Label, kv)
		}
	}
	return sel, nil
}

// unnamed is err without prefix, the "instance ID: " the caller prints
// before it (the server's messages often name the object already).
func unnamed(err error, prefix string) error {
	if msg := err.Error(); strings.HasPrefix(msg, prefix) {
		return withKind(strings.TrimPrefix(msg, prefix), err)
	}
	return err
}

// readIDs replaces a "-" argument by the ids read from stdin, separated by
// white space (as ls -o name prints them).
func readIDs(args []string, stdin io.Reader) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a != "-" {
			out = append(out, a)
			continue
		}
		if stdin == nil {
			return nil, usagef("- reads ids from stdin, and there is none")
		}
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sc.Split(bufio.ScanWords)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read ids from stdin: %w", err)
		}
	}
	return out, nil
}

// bulkRun is one container verb over many containers: it prints a line
// for each container changed, each failure on stderr, and progress.
type bulkRun struct {
	env      *Env
	c        *api.Client
	verb     view.ContainerVerb
	reason   string
	total    int // containers to do, for progress (0 = unknown)
	done     int
	failed   []string
	kinds    failures // of failed
	progress bool
}

// apply sends one bulk request and reports its items; it returns the
// answer's continue token.
func (b *bulkRun) apply(ctx context.Context, req api.BulkRequest) (string, error) {
	req.Verb, req.Reason = b.verb.String(), b.reason
	ans, err := b.c.Bulk(ctx, req)
	if err != nil {
		return "", explain(b.c, err)
	}
	for _, it := range ans.Items {
		if it.Error != "" {
			b.clearProgress()
			// The server's message names the container, or is said of it.
			msg := it.Error
			if !strings.HasPrefix(msg, "container "+it.ID) {
				msg = "container " + it.ID + ": " + msg
			}
			fmt.Fprintln(b.env.Stderr, termsafe.Text(msg))
			b.fail(it.ID, it.Err())
			continue
		}
		state := string(it.State)
		if it.Held {
			state += " (held)"
		}
		fmt.Fprintf(b.env.Stdout, "%s\t%s\tcontainer %s\n", termsafe.Escape(it.ID), b.verb, termsafe.Escape(state))
	}
	b.done += len(ans.Items)
	if b.progress {
		of := ""
		if b.total > 0 {
			of = fmt.Sprintf(" of %d", max(b.total, b.done))
		}
		fmt.Fprintf(b.env.Stderr, "\r%s: %d%s containers done, %d failed\x1b[K", b.verb, b.done, of, len(b.failed))
	}
	return ans.Continue, nil
}

// fail notes that id failed with err.
func (b *bulkRun) fail(id string, err error) {
	b.failed = append(b.failed, id)
	b.kinds.add(err)
}

func (b *bulkRun) clearProgress() {
	if b.progress {
		io.WriteString(b.env.Stderr, "\r\x1b[K")
	}
}

// ids applies the verb to ids, api.MaxBatchItems a request.
func (b *bulkRun) ids(ctx context.Context, ids []string) error {
	b.total += len(ids)
	for len(ids) > 0 {
		n := min(len(ids), api.MaxBatchItems)
		if _, err := b.apply(ctx, api.BulkRequest{IDs: ids[:n]}); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// selected applies the verb to what sel matches, a page a request,
// following the server's continue token.
func (b *bulkRun) selected(ctx context.Context, sel *api.Selector) error {
	if b.progress {
		// How many match now, for "N of M" (an estimate: the set may
		// change while the verb runs).
		page, err := b.c.ListContainerPage(ctx, api.ListQuery{States: sel.State, Q: sel.Q, Limit: 1, Labels: sel.Label}, "")
		if err == nil {
			b.total = page.Available
		}
	}
	req := api.BulkRequest{Selector: sel}
	for {
		next, err := b.apply(ctx, req)
		if err != nil || next == "" {
			return err
		}
		req.Continue = next
	}
}

// result is the run's error: which failed (the first few), or nil.
func (b *bulkRun) result() error {
	b.clearProgress()
	if len(b.failed) == 0 {
		return nil
	}
	shown := b.failed[:min(len(b.failed), 10)]
	more := ""
	if len(b.failed) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(b.failed)-len(shown))
	}
	return b.kinds.of(fmt.Sprintf("%d of %d failed: %s%s", len(b.failed), b.done, strings.Join(shown, " "), more))
}
