// The load pipeline on its own: records added in the order put while
// decoded out of order on several goroutines, the first failure in that
// order reported, and its goroutines gone after Close.

package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/store"
)

// numbered is Records of bodies "n:padding": Decode reads n, Add keeps the
// order of the ns it is given. hold, if set, is called by Decode before it
// returns record n.
type numbered struct {
	hold    func(n uint64)
	failAt  int64 // Decode fails on this record (-1: none)
	added   []uint64
	decodes atomic.Int64
}

func (r *numbered) Decode(body []byte) (any, error) {
	r.decodes.Add(1)
	head, _, _ := bytes.Cut(body, []byte(":"))
	n, err := strconv.ParseUint(string(head), 10, 64)
	if err != nil {
		return nil, err
	}
	if int64(n) == r.failAt {
		return nil, fmt.Errorf("record %d is bad", n)
	}
	if r.hold != nil {
		r.hold(n)
	}
	return n, nil
}

func (r *numbered) Add(v any) (uint64, string, error) {
	n := v.(uint64)
	r.added = append(r.added, n)
	return n, "c-" + strconv.FormatUint(n, 10), nil
}

// keyCheck checks that each record is the one its key names, as a store
// checks a record against its row.
func keyCheck(key []byte, seq uint64, id string, err error) error {
	k := binary.BigEndian.Uint64(key)
	if err != nil {
		return fmt.Errorf("load container %d: %w", k, err)
	}
	if seq != k || id != "c-"+strconv.FormatUint(k, 10) {
		return fmt.Errorf("load container %d: the record says %d, %s", k, seq, id)
	}
	return nil
}

// putAll puts records 0 to n-1 through p from one reused buffer (as a
// store's read buffer is), record big (if in range) over a MiB, and
// returns the first error Put gave and at which record.
func putAll(p *store.Pipeline, n, big int) (int, error) {
	var key [8]byte
	var body []byte
	for i := range n {
		binary.BigEndian.PutUint64(key[:], uint64(i))
		body = append(strconv.AppendInt(body[:0], int64(i), 10), ':')
		pad := i % 700
		if i == big {
			pad = 1 << 20
		}
		body = append(body, bytes.Repeat([]byte{'x'}, pad)...)
		if err := p.Put(key[:], body); err != nil {
			return i, err
		}
		clear(body) // the pipeline must have copied it
	}
	return n, nil
}

// atLeastTwoProcs runs the test with two decoders or more.
func atLeastTwoProcs(t *testing.T) {
	if prev := runtime.GOMAXPROCS(0); prev < 2 {
		runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
}

// Record 0 is not decoded until a record of a later batch is (within
// what the pipeline hands out before it waits for the oldest): the later
// batch is done first, and every record is still added in the order put.
func TestPipelineAddsInTheOrderPut(t *testing.T) {
	atLeastTwoProcs(t)
	const n, later = 5_000, 1_000
	released := make(chan struct{})
	timedOut := false
	r := &numbered{failAt: -1, hold: func(n uint64) {
		switch n {
		case later:
			close(released)
		case 0:
			select {
			case <-released:
			case <-time.After(wait.Budget(time.Minute)):
				timedOut = true // record later was never decoded meanwhile
			}
		}
	}}
	p := store.NewPipeline(r, keyCheck)
	defer p.Close()
	if i, err := putAll(p, n, 12_345); err != nil {
		t.Fatalf("put %d: %v", i, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if timedOut {
		t.Fatalf("record %d was not decoded while record 0 waited: the decode is not on several goroutines", later)
	}
	if len(r.added) != n {
		t.Fatalf("%d records added, want %d", len(r.added), n)
	}
	for i, got := range r.added {
		if got != uint64(i) {
			t.Fatalf("record %d added in place %d: added out of the order put (%v…)", got, i, r.added[max(0, i-3):i+1])
		}
	}
}

// The first failure in the order put ends the load, whichever decoder
// met a failure first; nothing after it is added, the store is told to
// stop reading, and the decoders are gone after Close.
func TestPipelineStopsAtTheFirstFailure(t *testing.T) {
	atLeastTwoProcs(t)
	for _, tc := range []struct {
		name  string
		check store.Check
		fail  int64 // the record that fails
		want  string
		added int // records added before the failure
	}{
		{"a record that does not decode", keyCheck, 2_600, "load container 2600: record 2600 is bad", 2_600},
		{"a record that does not match its key", func(key []byte, seq uint64, id string, err error) error {
			if binary.BigEndian.Uint64(key) == 1_700 {
				return errors.New("record 1700 is not its key's")
			}
			return keyCheck(key, seq, id, err)
		}, -1, "record 1700 is not its key's", 1_701},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			// Record 0 waits until a later record (of another batch) has
			// been decoded, so the failure is met while the records before
			// it are still out.
			released := make(chan struct{})
			r := &numbered{failAt: tc.fail, hold: func(n uint64) {
				switch n {
				case 1_000:
					close(released)
				case 0:
					select {
					case <-released:
					case <-time.After(wait.Budget(time.Minute)):
					}
				}
			}}
			p := store.NewPipeline(r, tc.check)
			const n = 20_000
			at, putErr := putAll(p, n, -1)
			err := p.Close()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Close: %v; want %q", err, tc.want)
			}
			if putErr == nil || putErr.Error() != tc.want || at == n {
				t.Fatalf("Put went on to the end (%d records, %v): the store was not told to stop reading", at, putErr)
			}
			if again := p.Close(); again != err {
				t.Fatalf("Close again: %v; want %v", again, err)
			}
			if len(r.added) != tc.added || (tc.added > 0 && r.added[tc.added-1] != uint64(tc.added-1)) {
				t.Fatalf("added %d records (last %v); want the %d before the failure", len(r.added), r.added[max(0, len(r.added)-1):], tc.added)
			}
			if err := p.Put(make([]byte, 8), []byte("1:")); err == nil {
				t.Fatal("Put after Close succeeded")
			}
			wait.Until(t, "the decoders to end after Close", 10*time.Second, func() bool { return runtime.NumGoroutine() <= before })
			if d := r.decodes.Load(); d >= n {
				t.Errorf("%d records decoded of %d: the decoders did not stop at the failure", d, n)
			}
		})
	}
}

// A load that stops early (the store's read failed) still stops the
// decoders; one with no record at all adds nothing.
func TestPipelineClosedEarly(t *testing.T) {
	before := runtime.NumGoroutine()
	r := &numbered{failAt: -1}
	p := store.NewPipeline(r, keyCheck)
	if err := p.Close(); err != nil || len(r.added) != 0 {
		t.Fatalf("an empty load: %v, %d added", err, len(r.added))
	}
	p = store.NewPipeline(r, keyCheck)
	if _, err := putAll(p, 700, -1); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil || len(r.added) != 700 {
		t.Fatalf("a short load: %v, %d added; want 700", err, len(r.added))
	}
	wait.Until(t, "the decoders to end after Close", 10*time.Second, func() bool { return runtime.NumGoroutine() <= before })
}
