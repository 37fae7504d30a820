// Pipeline: how a store's Load hands its records on, decoded on every
// core while the store reads the next ones, added in the order read on
// the Load's own goroutine (docs/design.md §3, Persistence).

package store

import (
	"cmp"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Records go to a decoder a batch at a time: a channel operation per
// record would cost about as much as its decode.
const (
	batchRecords = 256
	batchBytes   = 256 << 10
)

// Check is a store's check of one record, made in order after
// Records.Add: key is what the store keeps the record under (valid during
// the call only), seq and id what Add returned, err the record's decode
// or add error. A non-nil result (the store's wording of err, or a record
// that does not match its key) ends the load.
type Check func(key []byte, seq uint64, id string, err error) error

// Pipeline runs a Load's records through Records. The Load's goroutine
// calls Put for each record and then Close; Put copies the record into a
// batch, hands full batches to the decoders (a goroutine per core), and
// adds the decoded ones that are ready, oldest first, so reading,
// decoding and the index build overlap. The decoders are the pipeline's
// own and stop in Close, which a Load defers so that they stop on every
// path (an error, a cancelled read).
type Pipeline struct {
	recs   Records
	check  Check
	work   chan *batch // to the decoders
	wg     sync.WaitGroup
	stop   atomic.Bool // the load failed: the decoders skip what is left
	maxOut int         // batches out before Put waits for the oldest

	// The Load goroutine's alone.
	cur    *batch   // being filled
	out    []*batch // handed to the decoders, oldest first
	free   []*batch // added, for reuse
	err    error    // the first failure, in the order read
	closed bool
}

// batch is records on their way through the pipeline.
type batch struct {
	data []byte // the records' keys and bodies, back to back
	// ends[2i] is where record i's key ends in data, ends[2i+1] where
	// its body does.
	ends []int
	vals []any // what Decode returned for each record
	// failed is the first record Decode failed on (len(vals) when none)
	// and err its error.
	failed int
	err    error
	done   chan struct{} // capacity 1: a decoder has filled vals
}

// NewPipeline starts the decoders of a load into recs, whose records
// check checks.
func NewPipeline(recs Records, check Check) *Pipeline {
	workers := runtime.GOMAXPROCS(0)
	p := &Pipeline{recs: recs, check: check, work: make(chan *batch, workers), maxOut: 2*workers + 2}
	p.wg.Add(workers)
	for range workers {
		go p.decode()
	}
	return p
}

// errPutAfterClose is a store's mistake, not a record's.
var errPutAfterClose = errors.New("store: a record put after the load's pipeline was closed")

// Put hands on the record kept under key (key and body are copied: the
// caller may reuse them at once). It returns the load's first failure so
// far, after which the store should stop reading.
func (p *Pipeline) Put(key, body []byte) error {
	if p.closed {
		return cmp.Or(p.err, errPutAfterClose)
	}
	if p.err != nil {
		return p.err
	}
	if p.cur == nil {
		p.cur = p.newBatch()
	}
	b := p.cur
	b.data = append(b.data, key...)
	b.ends = append(b.ends, len(b.data))
	b.data = append(b.data, body...)
	b.ends = append(b.ends, len(b.data))
	if len(b.ends) >= 2*batchRecords || len(b.data) >= batchBytes {
		p.send()
		p.take(false)
	}
	return p.err
}

// Close adds every record put (up to the first failure), stops the
// decoders and returns the load's first failure. Calling it again
// returns the same.
func (p *Pipeline) Close() error {
	if p.closed {
		return p.err
	}
	p.closed = true
	if p.err == nil && p.cur != nil {
		p.send()
	}
	p.take(true)
	p.stop.Store(true)
	close(p.work)
	p.wg.Wait()
	return p.err
}

func (p *Pipeline) newBatch() *batch {
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return &batch{
		data: make([]byte, 0, batchBytes),
		ends: make([]int, 0, 2*batchRecords),
		vals: make([]any, 0, batchRecords),
		done: make(chan struct{}, 1),
	}
}

// send hands the batch being filled to the decoders.
func (p *Pipeline) send() {
	b := p.cur
	p.cur = nil
	p.out = append(p.out, b)
	p.work <- b
}

// take adds the decoded batches at the head of p.out, oldest first: those
// ready, waiting for the oldest while too many are out, or all of them.
func (p *Pipeline) take(all bool) {
	for len(p.out) > 0 && p.err == nil {
		b := p.out[0]
		if all || len(p.out) >= p.maxOut {
			<-b.done
		} else {
			select {
			case <-b.done:
			default:
				return
			}
		}
		p.out = p.out[1:]
		p.add(b)
		clear(b.vals)
		b.data, b.ends, b.vals, b.err = b.data[:0], b.ends[:0], b.vals[:0], nil
		p.free = append(p.free, b)
	}
}

// add adds b's records in order and checks each, stopping at the first
// failure.
func (p *Pipeline) add(b *batch) {
	start := 0
	for i := range len(b.ends) / 2 {
		key := b.data[start:b.ends[2*i]]
		start = b.ends[2*i+1]
		var seq uint64
		var id string
		err := b.err
		if i < b.failed {
			seq, id, err = p.recs.Add(b.vals[i])
		}
		if cerr := p.check(key, seq, id, err); cerr != nil || err != nil {
			p.err = cmp.Or(cerr, err)
			p.stop.Store(true)
			return
		}
	}
}

// decode is a decoder: it fills each batch's vals until the pipeline is
// closed, skipping the work once the load has failed.
func (p *Pipeline) decode() {
	defer p.wg.Done()
	for b := range p.work {
		n := len(b.ends) / 2
		b.vals, b.failed = b.vals[:n], n
		for i := 0; i < n && !p.stop.Load(); i++ {
			v, err := p.recs.Decode(b.data[b.ends[2*i]:b.ends[2*i+1]])
			if err != nil {
				b.failed, b.err = i, err
				break
			}
			b.vals[i] = v
		}
		b.done <- struct{}{}
	}
}
