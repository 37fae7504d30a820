// The adopt probe: the runner's version and its list in one batch, its watch opened beside it.

package worker

import (
	"context"
	"errors"

	"dispatch-tui/engine/runner"
)

// adoptList asks an adopted instance's runner for its version and its
// list in one batch over a serve session (docs/design.md §10, Takeover):
// after a restart or a takeover every instance found in the listing is
// probed before anything starts, and the runner is almost always the one
// wanted (its path names its hash), so checking the version as a process
// of its own first cost every host a second process start on that path.
// listWith issues the list (its sequence number, its deadline, a fence
// noted). listed reports whether that settled the probe: the version is
// the wanted one and the list, or its error, is the answer. Otherwise (an
// executor without sessions, no hash to check, a runner missing, broken
// or of another hash) the probe goes the long way: ensureRunner, then a
// list of its own; what this batch listed is dropped.
func (p *Pool) adoptList(exec runner.Executor, client runner.Client, listWith func(func(context.Context) ([]runner.Status, error)) error) (listed bool, err error) {
	if _, ok := exec.(runner.SessionExecutor); !ok || p.opts.RunnerHash == "" {
		return false, nil
	}
	err = listWith(func(ctx context.Context) ([]runner.Status, error) {
		replies, err := client.Batch(ctx, []runner.Request{{Verb: "version"}, {Verb: "list"}})
		if err != nil {
			return nil, err
		}
		version, list := &replies[0], &replies[1]
		if list.Code == runner.CodeFenced || version.Code == runner.CodeFenced {
			// A newer leader's epoch: no install would help.
			listed = true
			return nil, list.Err("list")
		}
		if version.Code != 0 || versionHash(string(version.Stdout)) != p.opts.RunnerHash {
			return nil, nil
		}
		listed = true
		if err := list.Err("list"); err != nil {
			return nil, err
		}
		return runner.ParseList(list.Stdout)
	})
	var ee *runner.ExitError
	if err != nil && !listed && errors.As(err, &ee) {
		// The serve session ended without replying: a runner missing
		// (127) or too old to serve; the long way installs it.
		return false, nil
	}
	return listed, err
}

// watchWhileAdopting opens w's runner watch as its adopt probe begins, not
// once the probe has made it ready: the first starts on an instance wait
// for its first watch to be ready (startsHeldLocked), and after a restart
// or a takeover the watch's own session and process start then came on top
// of the probe's before anything started. An exit announced before the
// probe's list is applied is not lost: the watch's ready asks for a list
// at once (watchReady), which finds it. A runner not installed yet fails
// the watch; it is opened again after its retry delay, as any watch that
// ended.
func (p *Pool) watchWhileAdopting(w *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.v.State == StateUnknown {
		p.openWatchLocked(w, p.clk.Now())
	}
}
