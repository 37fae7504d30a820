// Contents: everything a store holds, read through the interface, with a
// digest to tell two stores hold the same (store copy's check).

package store

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"slices"
)

// Contents is what a store holds.
type Contents struct {
	Records map[uint64][]byte // by Seq
	IDs     map[uint64]string // each record's container id
	Events  []Event           // oldest first
	Outputs map[string][]byte // by container id
	Paused  bool
	// ClusterID is the kept cluster id ("" while none).
	ClusterID string
	// Parts are the parts' records: by part name, then key.
	Parts map[string]map[string][]byte
}

// Event is one stored event.
type Event struct {
	Seq  uint64
	Body []byte
}

// ReadAll reads everything s holds; key returns a record's Seq and id
// (on the load's decoders: several calls at once). The output read is
// that of every record's container.
func ReadAll(s Store, key func(body []byte) (uint64, string, error)) (Contents, error) {
	c := Contents{Records: map[uint64][]byte{}, IDs: map[uint64]string{}, Outputs: map[string][]byte{}, Parts: map[string]map[string][]byte{}}
	loaded, err := s.Load(1, keyedRecords{&c, key}, func(uint64, []byte) error { return nil })
	if err != nil {
		return c, err
	}
	c.Paused = loaded.Paused
	err = s.Events(0, func(seq uint64, body []byte) (bool, error) {
		c.Events = append(c.Events, Event{Seq: seq, Body: slices.Clone(body)})
		return true, nil
	})
	if err != nil {
		return c, err
	}
	if err := readOutputs(s, &c); err != nil {
		return c, err
	}
	if c.ClusterID, err = s.ClusterID(); err != nil {
		return c, err
	}
	names, err := s.PartNames()
	if err != nil {
		return c, err
	}
	for _, name := range names {
		recs := map[string][]byte{}
		err := s.LoadPart(name, func(k, v []byte) error {
			recs[string(k)] = slices.Clone(v)
			return nil
		})
		if err != nil {
			return c, err
		}
		c.Parts[name] = recs
	}
	return c, nil
}

// keyedRecords takes a Load's records into c: each record's key read and
// its body copied on the decoders, the maps filled on the Load's
// goroutine.
type keyedRecords struct {
	c   *Contents
	key func(body []byte) (uint64, string, error)
}

// keyedRecord is one record on its way into Contents.
type keyedRecord struct {
	seq  uint64
	id   string
	body []byte
}

func (r keyedRecords) Decode(body []byte) (any, error) {
	seq, id, err := r.key(body)
	if err != nil {
		return nil, err
	}
	return &keyedRecord{seq, id, slices.Clone(body)}, nil
}

func (r keyedRecords) Add(v any) (uint64, string, error) {
	k := v.(*keyedRecord)
	r.c.Records[k.seq], r.c.IDs[k.seq] = k.body, k.id
	return k.seq, k.id, nil
}

// OutputLister is a Store that can read all its stored output in one go:
// for a store across a network, where an Output call per container would
// be a round trip each (100,000 of them for store copy's read-back).
type OutputLister interface {
	// AllOutputs calls fn with each stored output (body is valid during
	// the call only), in no particular order.
	AllOutputs(fn func(id string, body []byte) error) error
}

// readOutputs fills c.Outputs with the output of c's containers.
func readOutputs(s Store, c *Contents) error {
	if l, ok := s.(OutputLister); ok {
		ids := make(map[string]struct{}, len(c.IDs))
		for _, id := range c.IDs {
			ids[id] = struct{}{}
		}
		return l.AllOutputs(func(id string, body []byte) error {
			if _, ok := ids[id]; ok {
				c.Outputs[id] = slices.Clone(body)
			}
			return nil
		})
	}
	for _, id := range c.IDs {
		out, ok, err := s.Output(id)
		if err != nil {
			return err
		}
		if ok {
			c.Outputs[id] = out
		}
	}
	return nil
}

// PartRecords is how many records the parts hold.
func (c Contents) PartRecords() int {
	n := 0
	for _, recs := range c.Parts {
		n += len(recs)
	}
	return n
}

// Digest is a SHA-256 over the contents in a fixed order: records by
// Seq, events by Seq, outputs by id, the pause flag, the cluster id, then
// the parts by name and key.
func (c Contents) Digest() [32]byte {
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	seqs := make([]uint64, 0, len(c.Records))
	for seq := range c.Records {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		put(binary.BigEndian.AppendUint64(nil, seq))
		put(c.Records[seq])
	}
	for _, e := range c.Events {
		put(binary.BigEndian.AppendUint64(nil, e.Seq))
		put(e.Body)
	}
	ids := make([]string, 0, len(c.Outputs))
	for id := range c.Outputs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		put([]byte(id))
		put(c.Outputs[id])
	}
	if c.Paused {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	put([]byte(c.ClusterID))
	for _, name := range slices.Sorted(maps.Keys(c.Parts)) {
		put([]byte(name))
		recs := c.Parts[name]
		for _, k := range slices.Sorted(maps.Keys(recs)) {
			put([]byte(k))
			put(recs[k])
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// Batch returns c's records, events, parts and pause flag as one batch
// (a copy's write).
func (c Contents) Batch() *Batch {
	var b Batch
	seqs := make([]uint64, 0, len(c.Records))
	size, evSize := 0, 0
	for seq, rec := range c.Records {
		seqs = append(seqs, seq)
		size += EntryHeader + len(rec)
	}
	for _, e := range c.Events {
		evSize += len(e.Body) + 1
	}
	// Sized once: a store's worth of records grown by doubling was a
	// fifth of a copy's CPU.
	b.Reset()
	b.recs = slices.Grow(b.recs, size)
	b.evs = slices.Grow(b.evs, evSize)
	b.evSeqs = slices.Grow(b.evSeqs, len(c.Events))
	b.evEnds = slices.Grow(b.evEnds, len(c.Events))
	slices.Sort(seqs)
	for _, seq := range seqs {
		b.EndRecord(append(b.BeginRecord(seq), c.Records[seq]...))
	}
	for _, e := range c.Events {
		b.EndEvent(e.Seq, append(b.BeginEvent(), e.Body...))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Parts)) {
		w := PartWrite{Name: name}
		for _, k := range slices.Sorted(maps.Keys(c.Parts[name])) {
			w.Keys, w.Values = append(w.Keys, k), append(w.Values, c.Parts[name][k])
		}
		b.Parts = append(b.Parts, w)
	}
	b.Records = len(c.Records)
	b.Paused = c.Paused
	return &b
}
