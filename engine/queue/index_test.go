package queue

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestIDIndex(t *testing.T) {
	x := newIDIndex()
	a, b := &Container{}, &Container{}
	a.ID, b.ID = newID(), "c-0000000001" // b: not as newID spells ids
	upper := &Container{}
	upper.ID = "c-" + fmt.Sprintf("%016X", uint64(0xabcdef))
	for _, c := range []*Container{a, b, upper} {
		x.put(c)
	}
	if x.len() != 3 || len(x.other) != 2 || len(x.nums) != 1 {
		t.Fatalf("len %d: %d by number, %d by text; want 3: 1, 2", x.len(), len(x.nums), len(x.other))
	}
	for _, c := range []*Container{a, b, upper} {
		if got := x.get(c.ID); got != c {
			t.Fatalf("get(%s) = %p, want %p", c.ID, got, c)
		}
	}
	if _, ok := x.lookup("c-" + fmt.Sprintf("%016x", uint64(0xabcdef))); ok {
		t.Fatal("an id differing in case found another's record")
	}
	a2 := &Container{}
	a2.ID = a.ID
	x.put(a2) // replaces
	if x.get(a.ID) != a2 || x.len() != 3 {
		t.Fatalf("put of an indexed id: get %p (want %p), len %d", x.get(a.ID), a2, x.len())
	}
	x.remove(a.ID)
	x.remove(b.ID)
	x.remove("c-ffffffffffffffff") // not there
	if x.get(a.ID) != nil || x.get(b.ID) != nil || x.len() != 1 {
		t.Fatalf("after removes: %p, %p, len %d", x.get(a.ID), x.get(b.ID), x.len())
	}
	c := &Container{}
	c.ID = newID()
	x.put(c)
	if len(x.recs) != 3 || x.get(c.ID) != c {
		t.Fatalf("a put after removes grew the slots to %d, or lost the record", len(x.recs))
	}
	var all []*Container
	for r := range x.all() {
		all = append(all, r)
	}
	if len(all) != 2 {
		t.Fatalf("all yielded %d records, want 2", len(all))
	}
}

// The collector reads none of the index but its slice of slots: no more
// than 8 bytes (and the slice's spare room) a record. A map by id of
// record pointers was 35.
func TestIDIndexIsNotScanned(t *testing.T) {
	const n = 100_000
	recs := make([]*Container, n)
	for i := range recs {
		recs[i] = &Container{}
		recs[i].ID = newID()
	}
	before := scannableHeap()
	x := newIDIndex()
	for _, c := range recs {
		x.put(c)
	}
	after := scannableHeap()
	if per := float64(after-before) / n; per > 12 {
		t.Fatalf("the index adds %.1f bytes a record to what the collector scans, want at most 12", per)
	}
	runtime.KeepAlive(recs)
	runtime.KeepAlive(&x)
}

// scannableHeap is, after a collection, the bytes of heap objects that
// hold pointers: what each collection reads.
func scannableHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
