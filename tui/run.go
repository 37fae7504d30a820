// Running the console program, with change notifications coalesced.

package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
)

// coalesceWindow is the least time between two change messages to the
// program: changes arriving within it of the last message are merged into
// one at its end.
const coalesceWindow = 150 * time.Millisecond

// coalesce turns a stream of change notifications into calls of send at
// most one per window: a change after a quiet window is sent at once (a
// change made with the CLI reaches the screen without waiting out a
// window), and those within the window after a send are merged into one
// at its end. send may block (Program.Send is unbuffered). It returns
// when ctx ends or in is closed.
func coalesce(ctx context.Context, in <-chan struct{}, window time.Duration, send func()) {
	if in == nil {
		return
	}
	timer := time.NewTimer(window)
	timer.Stop()
	defer timer.Stop()
	open := false    // a window since the last send is running
	pending := false // a change arrived within it
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-in:
			if !ok {
				if pending {
					send()
				}
				return
			}
			if open {
				pending = true
				continue
			}
			send()
			timer.Reset(window)
			open = true
		case <-timer.C:
			open = false
			if pending {
				pending = false
				send()
				timer.Reset(window)
				open = true
			}
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
