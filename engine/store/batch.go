// Batch: what one flush (or one submit) writes, encoded once by the queue
// into buffers a store writes as they are.

package store

import (
	"encoding/binary"
	"fmt"
)

// The records of a batch are kept in the layout the embedded store's
// journal stores them in, so that it writes the batch as one value, with
// no copy: BatchMarker, the entry count (4 bytes, big-endian), then per
// entry the Seq (8 bytes), the JSON's length (4 bytes; 0 for a tombstone,
// a dropped container) and the JSON.
const (
	BatchMarker = 0x01
	BatchHeader = 1 + 4
	EntryHeader = 8 + 4
)

// Batch is one write: changed or new records, dropped containers, new
// events and the pause flag. The queue fills it (BeginRecord, EndRecord,
// Drop, BeginEvent, EndEvent) and reuses it after the write returns; a
// store reads it and must not keep its buffers.
type Batch struct {
	recs  []byte // the records' layout (above)
	nrec  int    // entries in recs, tombstones included
	open  int    // where the record being encoded starts in recs
	drops []Drop
	// The events' JSON, each ended by a newline, and each one's Seq and
	// end in evs.
	evs    []byte
	evSeqs []uint64
	evEnds []int
	// Paused is the scheduler's pause flag as the queue holds it now.
	Paused bool
	// Pass: the flush is a scheduler pass's (a store may do its own
	// upkeep then rather than on a user's verb); Records is how many
	// containers the queue holds.
	Pass    bool
	Records int
	// Parts are other packages' records written in the same
	// transaction (the cost ledger's).
	Parts []PartWrite
}

// PartWrite is what one flush writes of a part: its records by key, a nil
// value deleting its key.
type PartWrite struct {
	Name   string
	Keys   []string
	Values [][]byte
}

// Drop is a container dropped from the store, with its stored output.
type Drop struct {
	Seq uint64
	ID  string
}

// Reset empties b, keeping its buffers (up to maxKept bytes each).
func (b *Batch) Reset() {
	if cap(b.recs) > maxKept {
		b.recs = nil
	}
	if cap(b.evs) > maxKept {
		b.evs, b.evSeqs, b.evEnds = nil, nil, nil
	}
	b.recs = append(b.recs[:0], BatchMarker, 0, 0, 0, 0)
	b.nrec = 0
	clear(b.drops)
	b.drops = b.drops[:0]
	b.evs, b.evSeqs, b.evEnds = b.evs[:0], b.evSeqs[:0], b.evEnds[:0]
	b.Paused, b.Pass, b.Records = false, false, 0
	clear(b.Parts)
	b.Parts = b.Parts[:0]
}

// maxKept bounds the buffers a batch keeps between writes (a start-up or
// a bulk submit may have needed far more).
const maxKept = 8 << 20

// BeginRecord starts record seq and returns the buffer its JSON is to be
// appended to; EndRecord takes the buffer back.
func (b *Batch) BeginRecord(seq uint64) []byte {
	if len(b.recs) == 0 {
		b.Reset()
	}
	b.open = len(b.recs)
	buf := binary.BigEndian.AppendUint64(b.recs, seq)
	return append(buf, 0, 0, 0, 0)
}

// EndRecord ends the record BeginRecord started; buf is its buffer with
// the JSON appended.
func (b *Batch) EndRecord(buf []byte) {
	binary.BigEndian.PutUint32(buf[b.open+8:], uint32(len(buf)-b.open-EntryHeader))
	b.recs = buf
	b.nrec++
}

// Drop records that container seq (id) is dropped, with its output.
func (b *Batch) Drop(seq uint64, id string) {
	if len(b.recs) == 0 {
		b.Reset()
	}
	b.recs = binary.BigEndian.AppendUint64(b.recs, seq)
	b.recs = append(b.recs, 0, 0, 0, 0)
	b.nrec++
	b.drops = append(b.drops, Drop{Seq: seq, ID: id})
}

// BeginEvent returns the buffer the next event's JSON is to be appended
// to; EndEvent takes it back.
func (b *Batch) BeginEvent() []byte { return b.evs }

// EndEvent ends event seq (events come in Seq order), whose JSON buf
// holds appended since BeginEvent.
func (b *Batch) EndEvent(seq uint64, buf []byte) {
	b.evs = append(buf, '\n')
	b.evSeqs = append(b.evSeqs, seq)
	b.evEnds = append(b.evEnds, len(b.evs))
}

// Entries is the records' layout (above) and its number of entries,
// tombstones included; n is 0 for a batch of none.
func (b *Batch) Entries() (layout []byte, n int) {
	if b.nrec == 0 {
		return nil, 0
	}
	binary.BigEndian.PutUint32(b.recs[1:], uint32(b.nrec))
	return b.recs[:len(b.recs):len(b.recs)], b.nrec
}

// EachRecord calls fn with each entry's Seq and JSON (nil for a drop), in
// the order written.
func (b *Batch) EachRecord(fn func(seq uint64, body []byte) error) error {
	layout, n := b.Entries()
	if n == 0 {
		return nil
	}
	return EachEntry(layout, fn)
}

// Drops returns the containers the batch drops.
func (b *Batch) Drops() []Drop { return b.drops }

// Events returns how many events the batch holds.
func (b *Batch) Events() int { return len(b.evSeqs) }

// EventRun returns the events from the i-th on as one run of consecutive
// Seqs, at most max long: their first and last Seq, how many, and their
// JSON lines, each ended by a newline.
func (b *Batch) EventRun(i, max int) (first, last uint64, n int, lines []byte) {
	n = 1
	for i+n < len(b.evSeqs) && n < max && b.evSeqs[i+n] == b.evSeqs[i+n-1]+1 {
		n++
	}
	start := 0
	if i > 0 {
		start = b.evEnds[i-1]
	}
	end := b.evEnds[i+n-1]
	return b.evSeqs[i], b.evSeqs[i+n-1], n, b.evs[start:end:end]
}

// EventSeq returns the i-th event's Seq.
func (b *Batch) EventSeq(i int) uint64 { return b.evSeqs[i] }

// EachEntry calls fn with each entry of a batch in the records' layout
// (above): its Seq and JSON (nil for a tombstone). body points into v.
func EachEntry(v []byte, fn func(seq uint64, body []byte) error) error {
	return EachEntryAt(v, func(seq uint64, off, n int) error {
		var body []byte
		if n > 0 {
			body = v[off : off+n : off+n]
		}
		return fn(seq, body)
	})
}

// EachEntryAt calls fn with each entry of a batch in the records' layout
// (above): its Seq and where its JSON lies in v (n 0 for a tombstone).
func EachEntryAt(v []byte, fn func(seq uint64, off, n int) error) error {
	if len(v) < BatchHeader {
		return fmt.Errorf("%d bytes, want at least %d", len(v), BatchHeader)
	}
	n := int(binary.BigEndian.Uint32(v[1:]))
	at := BatchHeader
	for i := range n {
		if len(v)-at < EntryHeader {
			return fmt.Errorf("entry %d of %d cut short", i, n)
		}
		seq := binary.BigEndian.Uint64(v[at:])
		l := int(binary.BigEndian.Uint32(v[at+8:]))
		at += EntryHeader
		if l > len(v)-at {
			return fmt.Errorf("entry %d of %d cut short", i, n)
		}
		if err := fn(seq, at, l); err != nil {
			return err
		}
		at += l
	}
	if at != len(v) {
		return fmt.Errorf("%d bytes after its %d entries", len(v)-at, n)
	}
	return nil
}

// EntryCount returns the number of entries of a batch in the records'
// layout, from its header.
func EntryCount(v []byte) int { return int(binary.BigEndian.Uint32(v[1:])) }
