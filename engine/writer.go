// The pass writer: what passes and exit steps change is written to the
// store behind the engine's loop, so that the next one need not wait for
// the disk (docs/design.md §2, How it runs).

package engine

import (
	"sync"

	"dispatch-tui/engine/scheduler"
)

// passWriter writes (queue.FlushPass) on its own goroutine, then calls the
// Writes' Done. One write covers every pass and exit step done before it
// began: a slow disk (two fdatasyncs, up to hundreds of ms when busy)
// makes fewer, larger writes rather than a slower loop.
type passWriter struct {
	write func() error // queue.FlushPass

	mu      sync.Mutex
	pending []scheduler.Write

	wake chan struct{} // buffered: one wake-up is enough
	stop chan struct{}
	done chan struct{}
}

// startPassWriter starts a writer; close stops it.
func startPassWriter(write func() error) *passWriter {
	w := &passWriter{write: write, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// add has wr written, after what was added before it.
func (w *passWriter) add(wr scheduler.Write) {
	w.mu.Lock()
	w.pending = append(w.pending, wr)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *passWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
			w.writePending()
		case <-w.stop:
			w.writePending()
			return
		}
	}
}

// writePending writes what the Writes added so far changed, then sends
// their forgets.
func (w *passWriter) writePending() {
	w.mu.Lock()
	ws := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	err := w.write()
	for _, wr := range ws {
		wr.Done(err)
	}
}

// close writes what was added and not written yet, and returns once it
// is; add must not be called after.
func (w *passWriter) close() {
	close(w.stop)
	<-w.done
}
