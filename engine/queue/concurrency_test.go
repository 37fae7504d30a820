package queue

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// Submitters, a scheduler running passes, and readers all at once. Run with
// -race.
func TestConcurrentSubmitAndPass(t *testing.T) {
	const workers, perWorker = 8, 200
	e := newEnv(t, nil)
	q := e.q

	notes, stop := q.Subscribe()
	defer stop()

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]string{} // id -> name
		errs    = make(chan error, workers+2)
		done    = make(chan struct{})
		passes  int
		started int
	)
	// report never blocks: the scheduler reports while holding the lock.
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				name := fmt.Sprintf("w%d-%d", w, i)
				c, err := q.Submit(Spec{
					Name: name, Command: []string{"echo", name},
					Env:      map[string]string{"W": strconv.Itoa(w)},
					Priority: intp(i % 4),
				}, "operator:w"+strconv.Itoa(w))
				if err != nil {
					report(err)
					return
				}
				mu.Lock()
				ids[c.ID] = name
				mu.Unlock()
				if i%50 == 0 {
					// The scheduler may have run and finished it already:
					// then Hold is refused, and that is the only error allowed.
					if _, err := q.Hold(c.ID, "operator:w", ""); err != nil {
						if now, _ := q.Get(c.ID); !now.State.Final() {
							report(err)
							return
						}
					}
				}
			}
		})
	}

	// The scheduler: walk Active, set reasons, and move the head along.
	var schedWG sync.WaitGroup
	schedWG.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			err := q.Pass(func(tx *Tx) {
				passes++
				pos := 0
				for _, c := range tx.Active() {
					switch c.State {
					case Running:
						if err := tx.Finish(c, 0, tx.Now()); err != nil {
							report(err)
						}
					case Locked:
						if err := tx.Run(c, "i-1", "t"); err != nil {
							report(err)
						}
						started++
					case Queued:
						pos++
						if c.Held {
							tx.SetPending(c, Pending{Code: ReasonHeld})
						} else if pos == 1 {
							if err := tx.Lock(c, "t"); err != nil {
								report(err)
							}
						} else {
							tx.SetPending(c, Pending{Code: ReasonPosition, N: pos})
						}
					}
				}
			})
			if err != nil {
				report(err)
				return
			}
		}
	})

	// Readers.
	schedWG.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-notes:
				q.Len()
				var cs []*Container
				q.Each(func(c *Container) bool { cs = append(cs, c); return true })
				_ = q.Views(cs)
				if _, err := q.Events(0, 10); err != nil {
					report(err)
					return
				}
			}
		}
	})

	wg.Wait()
	close(done)
	schedWG.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d passes, %d containers started", passes, started)

	total, active := q.Len()
	if total != workers*perWorker {
		t.Fatalf("Len total = %d, want %d", total, workers*perWorker)
	}
	// Pending reasons are memory only: clear them so that the snapshot shows
	// exactly the stored fields.
	e.pass(func(tx *Tx) {
		for _, c := range tx.Active() {
			tx.SetPending(c, Pending{})
		}
	})
	before := e.snapshot()
	var nonFinal int
	for _, c := range before {
		if !c.State.Final() {
			nonFinal++
		}
	}
	if active != nonFinal {
		t.Fatalf("Len active = %d, records not final = %d", active, nonFinal)
	}

	e.reopen()
	if got, _ := e.q.Len(); got != workers*perWorker {
		t.Fatalf("after reopen: %d containers, want %d", got, workers*perWorker)
	}
	for id, name := range ids {
		c, ok := e.q.Get(id)
		if !ok {
			t.Fatalf("container %s (%s) lost", id, name)
		}
		if c.Name != name {
			t.Fatalf("container %s: name %q, want %q", id, c.Name, name)
		}
		wantEqual(t, "record "+id, c, before[id])
	}
	// Every submit, hold and state change has its event, numbered without gaps.
	evs := e.events()
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	var submits int
	for _, ev := range evs {
		if ev.Action == "submit" {
			submits++
		}
	}
	if submits != workers*perWorker {
		t.Fatalf("%d submit events, want %d", submits, workers*perWorker)
	}
}
