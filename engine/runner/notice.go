// Exit notices (docs/design.md §7.3): "runner watch" tells the dispatcher,
// as it happens, that a container ended, so that its exit is recorded at
// once rather than at the next probe. A notice is only a hint that the
// container's list line changed: it carries that line, read by the runner
// from its records once the exit is recorded (what "list <id>" prints),
// and the dispatcher records that line as part of the last list, never
// the event itself; a notice without one makes it read "list <id>". The
// probe's full list stays the safety net for a notice lost with its
// connection.

package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// The lines "runner watch" writes: WatchReady once it is watching (an exit
// from then on is announced), then, per container that ended, WatchExited,
// its id and its list line ("exited c1 {...}"). Other lines are ignored,
// for later additions.
const (
	WatchReady  = "ready"
	WatchExited = "exited"
)

// WatchExecutor is an Executor that can also keep a command running on the
// instance and hand over its output line by line as it comes: how Client
// keeps "runner watch" open.
type WatchExecutor interface {
	Executor
	// Watch runs cmd and calls line with each line it writes on stdout
	// (without the "\n"; the slice is only valid during the call), from
	// one goroutine, until cmd ends or ctx is done. It returns cmd's
	// *ExitError, the connection's error, or ctx's.
	Watch(ctx context.Context, cmd string, line func([]byte)) error
}

// ErrNoWatch is returned by Client.Watch when the executor cannot keep a
// watch: exits are then found by probes only.
var ErrNoWatch = errors.New("runner watch: executor cannot stream")

// Watch runs "runner watch" until ctx ends or the session does: ready is
// called once the runner watches, exited with each container it announces
// ended and the status the notice carries (nil when it carries none that
// reads, exited, for that id: read it with Statuses). Both are called from
// one goroutine.
func (c *Client) Watch(ctx context.Context, ready func(), exited func(id string, st *Status)) error {
	we, ok := c.Exec.(WatchExecutor)
	if !ok {
		return ErrNoWatch
	}
	err := we.Watch(ctx, Command{Verb: "watch", Epoch: c.Epoch}.Line(c.Path), func(line []byte) {
		verb, arg, _ := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
		switch string(verb) {
		case WatchReady:
			ready()
		case WatchExited:
			id, line, _ := bytes.Cut(arg, []byte{' '})
			if !ValidID(string(id)) {
				return
			}
			var st *Status
			if sts, err := ParseList(line); err == nil && len(sts) == 1 && sts[0].ID == string(id) && sts[0].State == StateExited {
				st = &sts[0]
			}
			exited(string(id), st)
		}
	})
	if err != nil {
		return fmt.Errorf("runner watch: %w", err)
	}
	return nil
}

// Statuses reads the status of each of ids ("list <id>" requests in one
// batch), as "runner list" would report it. An id the runner does not
// hold is left out.
func (c *Client) Statuses(ctx context.Context, ids []string) ([]Status, error) {
	reqs := make([]Request, len(ids))
	for i, id := range ids {
		reqs[i] = Request{Verb: "list", ID: id}
	}
	replies, err := c.Batch(ctx, reqs)
	if err != nil {
		return nil, err
	}
	var out []Status
	for i := range replies {
		switch r := &replies[i]; {
		case r.Code == 1:
			continue // forgotten, or never started
		case r.Code != 0:
			return nil, r.Err("list " + ids[i])
		default:
			sts, err := ParseList(r.Stdout)
			if err != nil {
				return nil, err
			}
			for _, st := range sts {
				if st.ID == ids[i] {
					out = append(out, st)
				}
			}
		}
	}
	return out, nil
}
