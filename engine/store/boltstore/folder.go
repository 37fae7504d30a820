// The folder: a large store's fold of its journal's oldest values, run in
// the background one transaction at a time, so that no flush waits for
// more than the one in progress (docs/design.md §3, Folds).

package boltstore

import (
	"fmt"
	"time"
)

// folder is the goroutine that goes on with a fold a flush started. A
// flush nudges it; Close stops it.
type folder struct {
	nudge chan struct{} // capacity 1: a nudge while one waits is the same
	stop  chan struct{}
	done  chan struct{}
}

// startFolder starts the store's folder (Open, unless the store is read
// only or its tests fold by hand: Options.FoldByHand).
func (s *Store) startFolder() {
	f := &folder{nudge: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.folder = f
	go func() {
		defer close(f.done)
		pause := time.NewTimer(0)
		defer pause.Stop()
		<-pause.C
		for {
			select {
			case <-f.stop:
				return
			case <-f.nudge:
			}
			for {
				if gate := s.opts.foldGate; gate != nil {
					select {
					case <-f.stop:
						return
					case <-gate:
					}
				}
				t0 := time.Now()
				if !s.foldStep() {
					break
				}
				// As long again before the next: the fold is upkeep,
				// and at full speed it held a core for a second or more
				// at a million while verbs and consoles waited for CPU
				// (BENCHMARKS.md, "The fold off the flush").
				pause.Reset(min(time.Since(t0), maxFoldPause))
				select {
				case <-f.stop:
					return
				case <-pause.C:
				}
			}
		}
	}()
}

// maxFoldPause bounds the folder's pause between two transactions.
const maxFoldPause = 100 * time.Millisecond

// nudgeFolder has the folder go on with the fold in progress. Under
// flushMu.
func (s *Store) nudgeFolder() {
	if s.folder == nil {
		return // folded by hand (tests)
	}
	select {
	case s.folder.nudge <- struct{}{}:
	default:
	}
}

// stopFolder stops the folder and waits for it: the transaction it is in,
// if any, ends first. A fold it leaves unfinished is as a crash leaves one:
// its values are still in the journal.
func (s *Store) stopFolder() {
	if s.folder == nil {
		return
	}
	close(s.folder.stop)
	<-s.folder.done
	s.folder = nil
}

// foldStep runs the next transaction of the fold in progress, if any, and
// reports whether any are left. A failure drops the fold (the next starts
// anew from the values left) and is the next flush's error, so that the
// queue sees the store fail as it sees a flush fail.
func (s *Store) foldStep() bool {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if !s.folding.on {
		return false
	}
	n, done, err := s.foldChunks(1)
	if err != nil {
		s.foldErr = fmt.Errorf("fold the journal's oldest entries: %w", err)
		return false
	}
	if done {
		s.journalLen -= n
	}
	return !done
}
