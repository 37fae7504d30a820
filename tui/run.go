// Running the console program, with change notifications coalesced.

package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
)

// coalesceWindow is how long change notifications are gathered before one
// message reaches the program.
const coalesceWindow = 150 * time.Millisecond

// coalesce turns a stream of change notifications into at most one call of
// send per window. send may block (Program.Send is unbuffered); changes
// arriving meanwhile are merged into the next call. It returns when ctx
// ends or in is closed.
func coalesce(ctx context.Context, in <-chan struct{}, window time.Duration, send func()) {
	if in == nil {
		return
	}
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case _, ok := <-in:
			if !ok {
				if fire != nil {
					send()
				}
				return
			}
			if fire == nil {
				timer = time.NewTimer(window)
				fire = timer.C
			}
		case <-fire:
			fire = nil
			send()
		}
	}
}

// Run runs the console until the user quits or ctx ends, and restores the
// terminal. It writes nothing to stdout/stderr itself besides the program.
func Run(ctx context.Context, opts Options) error {
	m, err := New(opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.ctx = ctx
	p := tea.NewProgram(m, tea.WithContext(ctx))
	go coalesce(ctx, opts.Backend.Changes(ctx), coalesceWindow, func() { p.Send(changedMsg{}) })
	_, err = p.Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // the caller's context ended: a normal exit
	}
	if err == nil && m.insp.fatal != nil {
		return m.insp.fatal // e.g. the token was refused: say so, like the CLI
	}
	return err
}
