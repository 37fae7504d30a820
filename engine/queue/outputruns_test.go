package queue

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

var runAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func runOut(s string, min int, dropped int64) runner.Output {
	return runner.Output{Data: []byte(s), Dropped: dropped, Started: runAt.Add(time.Duration(min) * time.Minute)}
}

// roundTrip is s stored and read back.
func roundTrip(t *testing.T, s StoredOutput) StoredOutput {
	t.Helper()
	got, err := DecodeOutput(EncodeOutput(s), 0)
	if err != nil {
		t.Fatalf("decode %q: %v", EncodeOutput(s), err)
	}
	return got
}

// Each run's output is kept in start order, whichever is stored first, and
// a run stored again is not added twice.
func TestStoredOutputKeepsEveryRunOnce(t *testing.T) {
	second := NewStoredOutput(runOut("two\n", 2, 0))
	s := roundTrip(t, second)
	s = roundTrip(t, s.Add(runOut("one\n", 1, 0), 0)) // the earlier run, stored late
	s = roundTrip(t, s.Add(runOut("two\n", 2, 0), 0)) // stored again
	s = roundTrip(t, s.Add(runOut("three", 3, 0), 0))
	if got, want := string(s.Data), "one\ntwo\nthree"; got != want || s.Dropped != 0 || len(s.Runs) != 3 {
		t.Fatalf("data %q, %d dropped, %d runs; want %q, none dropped, 3 runs", got, s.Dropped, len(s.Runs), want)
	}
	text := string(s.Text())
	want := RunNote(1, 3, runAt.Add(time.Minute)) + "one\n" + RunNote(2, 3, runAt.Add(2*time.Minute)) + "two\n" + RunNote(3, 3, runAt.Add(3*time.Minute)) + "three"
	if text != want {
		t.Fatalf("logs show %q, want %q", text, want)
	}
	if one := string(second.Text()); one != "two\n" {
		t.Fatalf("one run's output shows as %q, want it as it was", one)
	}
}

// Over the limit, the end of the whole is kept: the cut is only ever at
// its start, and Dropped counts all that went.
func TestStoredOutputCutKeepsTheEnd(t *testing.T) {
	const limit = 2 * runner.OutputCutUnit
	a := strings.Repeat("a", 1500)
	b := strings.Repeat("b", 1500)
	s := NewStoredOutput(runOut(a, 1, 0)).Add(runOut(b, 2, 0), limit)
	s = roundTrip(t, s)
	if n := int64(len(s.Data)); n > limit || s.Dropped+n != 3000 || !strings.HasSuffix(string(s.Data), b) {
		t.Fatalf("%d bytes kept, %d dropped; want at most %d kept, ending with the second run's, the rest dropped", n, s.Dropped, limit)
	}
	// A run older than the cut is part of what was cut.
	old := s.Add(runOut("zero\n", 0, 0), limit)
	if !bytes.Equal(old.Data, s.Data) || old.Dropped != s.Dropped+5 || !old.Has(runAt) {
		t.Fatalf("an older run after a cut: %d kept, %d dropped (was %d); want it counted as dropped", len(old.Data), old.Dropped, s.Dropped)
	}
	// A run whose own start was cut takes the place of those before it.
	cut := s.Add(runOut("c", 3, 4096), limit)
	if string(cut.Data) != "c" || cut.Dropped != 3000+4096 {
		t.Fatalf("after a cut run: %q kept, %d dropped; want only its output, all before it dropped", cut.Data, cut.Dropped)
	}
}

// An output stored before runs were recorded reads as one run, with the
// record's count of bytes cut, and a later run is added after it.
func TestStoredOutputFromBeforeRuns(t *testing.T) {
	s, err := DecodeOutput([]byte("legacy\n"), 2048)
	if err != nil || string(s.Data) != "legacy\n" || s.Dropped != 2048 || len(s.Runs) != 1 {
		t.Fatalf("legacy body: %+v, %v", s, err)
	}
	s = roundTrip(t, s.Add(runOut("new\n", 1, 0), 0))
	if string(s.Data) != "legacy\nnew\n" || s.Dropped != 2048 {
		t.Fatalf("legacy then a run: %q, %d dropped", s.Data, s.Dropped)
	}
	if _, err := DecodeOutput([]byte(runsMagic+"0\n5 9\n\nshort"), 0); err == nil {
		t.Fatal("a body shorter than its runs say decoded without error")
	}
}
