// Records: what a Load hands the container records to, in two stages, a
// decode that may run on every core and an add that runs in order on one.

package store

import "slices"

// Records takes the container records a Load reads. A start-up's cost is
// decoding each record, which needs nothing but the record, so Decode may
// run on several goroutines while the store reads on; building the index
// from the results does not share, so Add runs on the goroutine that
// called Load, one record at a time, in the order the store read them
// (Pipeline).
type Records interface {
	// Decode decodes one record; body is valid during the call only. It
	// is called on several goroutines at once.
	Decode(body []byte) (any, error)
	// Add takes what Decode returned for one record and returns its Seq
	// and container id (which the store checks against its key).
	Add(v any) (seq uint64, id string, err error)
}

// RecordFunc is Records of one function that does both stages on the
// Load's goroutine, in order (tests and tools, where a record's cost does
// not matter): fn may keep state without locks.
type RecordFunc func(body []byte) (seq uint64, id string, err error)

// Decode copies body for Add.
func (f RecordFunc) Decode(body []byte) (any, error) { return slices.Clone(body), nil }

// Add calls f with the record.
func (f RecordFunc) Add(v any) (uint64, string, error) { return f(v.([]byte)) }
