// A container's stored output as the runs it holds: each attempt's run's
// output, oldest first, so that a retried container keeps them all and a
// run stored again (a forget retried) is recognised, not added twice.

package queue

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"

	"dispatch-tui/engine/runner"
)

// runsMagic opens a stored output written with its runs (EncodeOutput);
// a body without it was stored before runs were recorded: one run, of
// unknown start. No command's output starts with a NUL and this line.
const runsMagic = "\x00dispatch-tui runs 1\n"

// StoredOutput is a container's stored output: the runs whose output it
// holds, and Data, the end of their outputs one after the other, after
// Dropped bytes cut from the start of the whole (so that Data stays
// within [containers] max_output, docs/design.md §10.1).
type StoredOutput struct {
	Runs    []OutputRun // oldest first
	Dropped int64
	Data    []byte
}

// OutputRun is one run in a StoredOutput: when it started, as its runner
// listed it (zero: unknown), and how many bytes of Data are its (0: all
// of it was cut).
type OutputRun struct {
	Started time.Time
	Len     int
}

// NewStoredOutput is the stored output of one run, out.
func NewStoredOutput(out runner.Output) StoredOutput {
	return StoredOutput{Runs: []OutputRun{{Started: out.Started, Len: len(out.Data)}}, Dropped: out.Dropped, Data: out.Data}
}

// Has reports whether the output of the run started at started is in s
// (kept, or cut as older than what is kept).
func (s StoredOutput) Has(started time.Time) bool {
	return slices.ContainsFunc(s.Runs, func(r OutputRun) bool { return r.Started.Equal(started) })
}

// Add returns s with out, another run's output, in its place by start
// time, and at most limit bytes of Data (limit <= 0: no limit) cut as a
// runner cuts, from the start of the whole: the end is kept. A run older
// than a cut already made, or any run before one whose own output was cut,
// is counted in Dropped rather than kept, so that only the start of the
// whole is ever missing. s already holding out's run is returned as is.
func (s StoredOutput) Add(out runner.Output, limit int64) StoredOutput {
	if s.Has(out.Started) {
		return s
	}
	p, _ := slices.BinarySearchFunc(s.Runs, out.Started, func(r OutputRun, t time.Time) int {
		if r.Started.After(t) {
			return 1
		}
		return -1 // runs of the same start time as out are older
	})
	kept := 0 // bytes of Data before run p
	for _, r := range s.Runs[:p] {
		kept += r.Len
	}
	next := StoredOutput{Runs: slices.Clone(s.Runs), Dropped: s.Dropped}
	run := OutputRun{Started: out.Started, Len: len(out.Data)}
	switch {
	case s.Dropped > 0 && kept == 0:
		// Older than the cut: it is part of what was cut.
		run.Len = 0
		next.Dropped += out.Dropped + int64(len(out.Data))
		next.Data = slices.Clone(s.Data)
	case out.Dropped > 0:
		// Its own start is cut: whatever came before it goes too.
		next.Dropped += int64(kept) + out.Dropped
		for i := range p {
			next.Runs[i].Len = 0
		}
		next.Data = append(slices.Clone(out.Data), s.Data[kept:]...)
	default:
		next.Data = slices.Concat(s.Data[:kept], out.Data, s.Data[kept:])
	}
	next.Runs = slices.Insert(next.Runs, p, run)
	if n := runner.DroppedFor(int64(len(next.Data)), limit); n > 0 {
		next.Dropped += n
		next.Data = next.Data[n:]
		for i := range next.Runs {
			cut := min(int64(next.Runs[i].Len), n)
			next.Runs[i].Len -= int(cut)
			if n -= cut; n == 0 {
				break
			}
		}
	}
	return next
}

// EncodeOutput is s as the store keeps it: runsMagic, a line with
// Dropped, a line per run (its start in Unix nanoseconds, 0 for unknown,
// and its length), an empty line, then Data.
func EncodeOutput(s StoredOutput) []byte {
	b := make([]byte, 0, len(runsMagic)+24*(len(s.Runs)+1)+len(s.Data))
	b = append(b, runsMagic...)
	b = strconv.AppendInt(b, s.Dropped, 10)
	b = append(b, '\n')
	for _, r := range s.Runs {
		var ns int64
		if !r.Started.IsZero() {
			ns = r.Started.UnixNano()
		}
		b = strconv.AppendInt(b, ns, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(r.Len), 10)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, s.Data...)
}

// DecodeOutput reads what EncodeOutput wrote. A body without runsMagic
// is one run of unknown start, all Data. dropped is the record's count of
// bytes cut (logs_truncated), which such a body does not hold.
func DecodeOutput(body []byte, dropped int64) (StoredOutput, error) {
	rest, ok := bytes.CutPrefix(body, []byte(runsMagic))
	if !ok {
		return StoredOutput{Runs: []OutputRun{{Len: len(body)}}, Dropped: dropped, Data: body}, nil
	}
	bad := func(what string) (StoredOutput, error) {
		return StoredOutput{}, fmt.Errorf("stored output: bad %s", what)
	}
	line, rest, ok := bytes.Cut(rest, []byte{'\n'})
	var s StoredOutput
	var err error
	if s.Dropped, err = strconv.ParseInt(string(line), 10, 64); !ok || err != nil || s.Dropped < 0 {
		return bad("count of bytes cut")
	}
	total := 0
	for {
		if line, rest, ok = bytes.Cut(rest, []byte{'\n'}); !ok {
			return bad("list of runs")
		}
		if len(line) == 0 {
			break
		}
		start, length, _ := bytes.Cut(line, []byte{' '})
		ns, err1 := strconv.ParseInt(string(start), 10, 64)
		n, err2 := strconv.Atoi(string(length))
		if err1 != nil || err2 != nil || n < 0 {
			return bad("run " + strconv.Quote(string(line)))
		}
		r := OutputRun{Len: n}
		if ns != 0 {
			r.Started = time.Unix(0, ns).UTC()
		}
		s.Runs = append(s.Runs, r)
		total += n
	}
	if total != len(rest) {
		return bad("length")
	}
	s.Data = rest
	return s, nil
}

// Text is s as logs shows it: Data, with a line before each run's output
// when it holds more than one run's, saying which run and when it started.
func (s StoredOutput) Text() []byte {
	shown := 0
	for _, r := range s.Runs {
		if r.Len > 0 {
			shown++
		}
	}
	if shown < 2 {
		return s.Data
	}
	b := make([]byte, 0, len(s.Data)+80*shown)
	at := 0
	for i, r := range s.Runs {
		if r.Len == 0 {
			continue
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		b = append(b, RunNote(i+1, len(s.Runs), r.Started)...)
		b = append(b, s.Data[at:at+r.Len]...)
		at += r.Len
	}
	return b
}

// RunNote is the line logs shows before the output of run n of total of a
// container that keeps more than one run's output.
func RunNote(n, total int, started time.Time) string {
	when := "at an unknown time"
	if !started.IsZero() {
		when = "at " + started.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("[dispatch-tui: run %d of %d, started %s]\n", n, total, when)
}

// StoredOutput returns the output kept by StoreLogsBatch for id, if any,
// with its runs.
func (q *Queue) StoredOutput(id string) (StoredOutput, bool, error) {
	body, found, err := q.store.Output(id)
	if err != nil || !found {
		return StoredOutput{}, found, err
	}
	var dropped int64
	q.mu.Lock()
	if c, ok := q.byID.lookup(id); ok {
		dropped = c.LogsTruncated.Bytes()
	}
	q.mu.Unlock()
	s, err := DecodeOutput(body, dropped)
	if err != nil {
		return StoredOutput{}, false, fmt.Errorf("container %s: %w", id, err)
	}
	return s, true, nil
}

// Retried reports, for each of ids, whether it has started more than
// once: whether its stored output may hold another run's.
func (q *Queue) Retried(ids []string) []bool {
	r := make([]bool, len(ids))
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, id := range ids {
		if c, ok := q.byID.lookup(id); ok {
			r[i] = c.Attempts > 1
		}
	}
	return r
}
