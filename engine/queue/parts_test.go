package queue

import (
	"maps"
	"slices"
	"sync"
	"testing"
)

// mapPart is a Part holding string records.
type mapPart struct {
	mu      sync.Mutex
	recs    map[string]string
	changed map[string]bool
}

func newMapPart() *mapPart { return &mapPart{recs: map[string]string{}, changed: map[string]bool{}} }

func (p *mapPart) PartName() string { return "test-part" }

func (p *mapPart) LoadRecord(k, v []byte) error {
	p.recs[string(k)] = string(v)
	return nil
}

func (p *mapPart) PendingRecords() (keys []string, values [][]byte, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(p.changed)) {
		keys = append(keys, k)
		if v, ok := p.recs[k]; ok {
			values = append(values, []byte(v))
		} else {
			values = append(values, nil)
		}
	}
	clear(p.changed)
	return keys, values, nil
}

func (p *mapPart) Unwritten(keys []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.changed[k] = true
	}
}

func (p *mapPart) set(k, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v == "" {
		delete(p.recs, k)
	} else {
		p.recs[k] = v
	}
	p.changed[k] = true
}

// A part's records are written by a flush that has nothing else to
// write, deleted when their value is nil, and read back at open.
func TestPartsWrittenInTheFlush(t *testing.T) {
	part := newMapPart()
	e := newEnv(t, func(o *envOptions) { o.Parts = []Part{part} })
	part.set("a", "1")
	part.set("b", "2")
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	err := e.q.store.LoadPart("test-part", func(k, v []byte) error { stored[string(k)] = string(v); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if stored["a"] != "1" {
		t.Errorf("after the flush the store holds a=%q, want 1", stored["a"])
	}
	part.set("b", "")
	part.set("c", "3")
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	again := newMapPart()
	e.close()
	e.opts.Parts = []Part{again}
	e.q = e.open()
	if want := map[string]string{"a": "1", "c": "3"}; !maps.Equal(again.recs, want) {
		t.Errorf("read back %v, want %v", again.recs, want)
	}
}
