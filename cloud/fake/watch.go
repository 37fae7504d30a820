// "runner watch" of the in-memory runner: exits announced as a real runner announces them.

package fake

// "runner watch" of the in-memory runner: exits announced as the runner
// would announce them (docs/design.md §7.3). With a real clock a timer
// wakes each watch when its instance's next container ends, and every
// call on the instance wakes it too (a kill ends a container at once).
// With a fake clock time moves only when a test says so: AnnounceExits
// is then when the runners notice their exits.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

// memWatch is one open "runner watch" session.
type memWatch struct {
	kick chan struct{}
	// announced: the container (by identity, so that a forget and a new
	// start under the same id is announced again) each id was announced
	// for.
	announced map[string]*ctr
}

// watchExecutor is the executor of a driver whose runners announce exits.
type watchExecutor struct{ executor }

var _ runner.WatchExecutor = (*watchExecutor)(nil)

// Watch implements runner.WatchExecutor for "runner watch": "ready", then
// "exited <id> <list line>" once for each container whose exit is
// recorded after that. A container lost with its supervisor is not announced (nothing
// records its end); the list reports it. It ends, as a cut connection
// does, when the instance goes away or breaks.
func (e *watchExecutor) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	if err := ctx.Err(); err != nil {
		return runner.NotSent(err)
	}
	_, c, err := runner.ParseLine(cmd)
	if err != nil || c.Verb != "watch" {
		_, _, err := exitErr(2, "runner: not a watch: %q", cmd)
		return err
	}
	d := e.d
	w := &memWatch{kick: make(chan struct{}, 1), announced: map[string]*ctr{}}
	d.mu.Lock()
	s := d.instances[e.id]
	if err := watchReachable(s, d.clock.Now()); err != nil {
		d.mu.Unlock()
		return runner.NotSent(err)
	}
	highest, refused := runner.CheckEpoch(c.Epoch, s.epoch)
	if refused {
		d.mu.Unlock()
		_, _, err := exitErr(runner.CodeFenced, "%s", runner.FencedMessage("watch", c.Epoch, s.epoch))
		return err
	}
	s.epoch = highest
	now := d.clock.Now()
	for id, c := range s.containers {
		if st, gone := c.status(now); !gone && st.State == runner.StateExited {
			w.announced[id] = c // ended before the watch began
		}
	}
	s.watchers = append(s.watchers, w)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		s.watchers = slices.DeleteFunc(s.watchers, func(x *memWatch) bool { return x == w })
		d.mu.Unlock()
	}()
	line([]byte(runner.WatchReady))
	_, realClock := d.clock.(clock.Real)
	for {
		d.mu.Lock()
		ended, next, err := d.watchStepLocked(s, w)
		d.mu.Unlock()
		if err != nil {
			return err
		}
		for _, st := range ended {
			var b bytes.Buffer
			b.WriteString(runner.WatchExited + " " + st.ID + " ")
			if err := runner.FormatList(&b, []runner.Status{st}); err != nil {
				return err
			}
			line(bytes.TrimSuffix(b.Bytes(), []byte{'\n'}))
		}
		var timer *time.Timer
		var fired <-chan time.Time
		if realClock && !next.IsZero() {
			timer = time.NewTimer(time.Until(next))
			fired = timer.C
		}
		select {
		case <-ctx.Done():
		case <-w.kick:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func watchReachable(s *instState, now time.Time) error {
	switch {
	case s == nil:
		return fmt.Errorf("no such host: %w", ErrUnreachable)
	case !s.live() || s.broken || now.Before(s.readyAt):
		return connectionLost(s)
	}
	return nil
}

// watchStepLocked returns the statuses of the containers of s that ended
// since w last looked, sorted by id, and when the next one running ends
// (zero: none is known to). d.mu must be held.
func (d *Driver) watchStepLocked(s *instState, w *memWatch) (ended []runner.Status, next time.Time, err error) {
	now := d.clock.Now()
	if err := watchReachable(s, now); err != nil {
		return nil, time.Time{}, err
	}
	for id, c := range w.announced {
		if s.containers[id] != c {
			delete(w.announced, id) // forgotten since
		}
	}
	for id, c := range s.containers {
		st, gone := c.status(now)
		switch {
		case gone:
		case st.State == runner.StateExited:
			if st.Lost == "" && w.announced[id] != c {
				w.announced[id] = c
				ended = append(ended, st)
			}
		default:
			if at, ok := c.endsAt(); ok && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	slices.SortFunc(ended, func(a, b runner.Status) int { return strings.Compare(a.ID, b.ID) })
	return ended, next, nil
}

// endsAt is when a running container will end by itself or by its health
// check, if it will.
func (c *ctr) endsAt() (time.Time, bool) {
	at, _, ok := c.exit()
	if uAt, _, _, unhealthy := c.unhealthyEnd(); unhealthy && (!ok || uAt.Before(at)) {
		at, ok = uAt, true
	}
	return at, ok
}

// kickWatchersLocked wakes the watches of s after a call on it, with a real
// clock (see the top of this file). d.mu must be held.
func (d *Driver) kickWatchersLocked(s *instState) {
	if _, ok := d.clock.(clock.Real); !ok || s == nil {
		return
	}
	for _, w := range s.watchers {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// AnnounceExits makes every open watch announce the exits its instance
// has recorded by now: with a fake clock, the moment the runners notice
// them.
func (d *Driver) AnnounceExits() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.instances {
		for _, w := range s.watchers {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
}
