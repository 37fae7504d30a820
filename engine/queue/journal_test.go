package queue

import (
	"fmt"
	"math/rand/v2"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// crash closes the file after a flush without folding the journal, as a
// process that dies after its last commit leaves it.
func (e *env) crash() {
	e.tb.Helper()
	if err := e.q.Flush(); err != nil {
		e.tb.Fatalf("flush: %v", err)
	}
	if err := e.q.db.Close(); err != nil {
		e.tb.Fatalf("close the file: %v", err)
	}
	e.q = nil
}

// journalLenInFile counts the journal's entries (records and tombstones)
// in the (closed) store file.
func journalLenInFile(tb testing.TB, path string) int {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketJournal); b != nil {
			_, jn, err := readJournal(b)
			n = jn
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Random churn — submits, every transition, priority changes, holds,
// kills, drops of finished containers, folds (explicit, and by passes past
// a small threshold) — with crashes and clean reopens at random points:
// every reopen finds each container as it was in memory after the last
// flush, and a dropped container never comes back.
func TestJournalChurnCrashReopen(t *testing.T) {
	for seed := range uint64(12) {
		// Seeds 6 and up play a large store: no rebuild, the journal
		// kept at a small window folded oldest first (foldOldest).
		large := seed >= 6
		t.Run(fmt.Sprint("seed=", seed, " large=", large), func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.KeepFinished = 4; o.NoSync = true })
			rng := rand.New(rand.NewPCG(seed, 7))
			foldMin := 1 + rng.IntN(40)
			window := 1 + rng.IntN(20)
			setFold := func() {
				e.q.foldMin = foldMin
				if large {
					e.q.rebuildMax, e.q.keepJournal = 1, window
				}
			}
			setFold()
			dropped := map[string]bool{}
			var ids []string
			live := func() []string {
				out := ids[:0]
				for _, id := range ids {
					if _, ok := e.q.Get(id); ok {
						out = append(out, id)
					} else {
						dropped[id] = true
					}
				}
				ids = out
				return ids
			}
			check := func(step int, want map[string]Container) {
				t.Helper()
				got := e.snapshot()
				for id := range got {
					if dropped[id] {
						t.Fatalf("step %d: dropped container %s came back", step, id)
					}
				}
				wantEqual(t, fmt.Sprintf("step %d: containers after reopen", step), got, want)
			}
			for step := range 400 {
				switch r := rng.IntN(20); {
				case r < 4:
					n := 1 + rng.IntN(3)
					specs := make([]Spec, n)
					for i := range specs {
						specs[i] = Spec{Command: []string{"true"}, Priority: intp(rng.IntN(5))}
					}
					cs, err := e.q.SubmitBatch(specs, "test")
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range cs {
						ids = append(ids, c.ID)
					}
				case r < 12:
					// A pass with a few random transitions; illegal ones
					// are refused and write nothing.
					e.pass(func(tx *Tx) {
						for range 1 + rng.IntN(4) {
							act := tx.Active()
							if len(act) == 0 {
								return
							}
							c := act[rng.IntN(len(act))]
							switch rng.IntN(8) {
							case 0:
								_ = tx.Lock(c, "small")
							case 1:
								_ = tx.Run(c, fmt.Sprint("i-", rng.IntN(9)), "small")
							case 2:
								_ = tx.Finish(c, rng.IntN(2), tx.Now())
							case 3:
								_ = tx.Cancel(c, ReasonKilled, "test")
							case 4:
								_ = tx.Requeue(c, "test")
							case 5:
								_ = tx.Unlock(c)
							case 6:
								tx.RequestKill(c, "test")
							case 7:
								tx.MarkSeen(c)
							}
						}
					})
					e.clk.Advance(1e9)
				case r < 16:
					l := live()
					if len(l) == 0 {
						continue
					}
					id := l[rng.IntN(len(l))]
					switch rng.IntN(4) {
					case 0:
						_, _ = e.q.SetPriority(id, rng.IntN(5), "test", "")
					case 1:
						_, _ = e.q.Hold(id, "test", "")
					case 2:
						_, _ = e.q.Release(id, "test", "")
					case 3:
						_, _ = e.q.Kill(id, "test", "")
					}
				case r < 17:
					if err := e.q.fold(); err != nil {
						t.Fatal(err)
					}
				case r < 19:
					live()
					if err := e.q.Flush(); err != nil {
						t.Fatal(err)
					}
					want := e.snapshot()
					e.crash()
					e.q = e.open()
					setFold()
					if large && e.q.journalLen > window {
						t.Fatalf("step %d: %d journal entries after a crash, want at most the window %d", step, e.q.journalLen, window)
					}
					check(step, want)
				default:
					live()
					if err := e.q.Flush(); err != nil {
						t.Fatal(err)
					}
					want := e.snapshot()
					e.reopen()
					setFold()
					if n := e.q.journalLen; n != 0 {
						t.Fatalf("step %d: %d journal entries after a clean close", step, n)
					}
					check(step, want)
				}
			}
			live()
			if len(dropped) == 0 {
				t.Error("no container was dropped: the test does not cover drops")
			}
		})
	}
}

// A clean Close folds the journal: the file's containers bucket alone
// holds every record (what a binary that predates the journal reads).
func TestJournalCloseFolds(t *testing.T) {
	e := newEnv(t, nil)
	ids := persistenceFixture(t, e)
	if e.q.journalLen == 0 {
		t.Fatal("the fixture's changes are not in the journal")
	}
	want := e.snapshot()
	e.close()
	if n := journalLenInFile(t, e.opts.Path); n != 0 {
		t.Fatalf("%d journal entries after Close, want 0", n)
	}
	if got := fileContainerKeys(t, e.opts.Path); len(got) != len(ids) {
		t.Fatalf("containers bucket holds %d records, want %d", len(got), len(ids))
	}
	// A binary that knew nothing of the journal did not create it: the
	// store opens the same, and the bucket is created.
	db, err := bolt.Open(e.opts.Path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketJournal) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	e.q = e.open()
	wantEqual(t, "containers after reopening a store without a journal", e.snapshot(), want)
	if !e.q.SetLogsError(ids[0], "lost") {
		t.Fatal("SetLogsError changed nothing")
	}
	e.crash()
	if n := journalLenInFile(t, e.opts.Path); n == 0 {
		t.Fatal("a flush after reopening wrote no journal entry")
	}
}
