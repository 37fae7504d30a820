package queue

import (
	"testing"
	"unsafe"
)

// TestContainerLayout pins the record layout a scheduler pass depends on.
// Most waiting containers are decided from the entries beside the order
// (entries.go) without their records; those a pass does load it loads two
// cache lines of (the scheduler's touch reads State for the first and
// FirstSeenAt for the second). Every field the pass reads for a waiting
// container must be in those two lines, and the record must stay in the
// 512-byte size class. Records are 512 bytes, so each starts a cache line.
func TestContainerLayout(t *testing.T) {
	const line = 64
	var c Container
	hot := []struct {
		name      string
		off, size uintptr
	}{
		{"State", unsafe.Offsetof(c.State), unsafe.Sizeof(c.State)},
		{"Priority", unsafe.Offsetof(c.Priority), unsafe.Sizeof(c.Priority)},
		{"Held", unsafe.Offsetof(c.Held), unsafe.Sizeof(c.Held)},
		{"hints", unsafe.Offsetof(c.hints), unsafe.Sizeof(c.hints)},
		{"ord", unsafe.Offsetof(c.ord), unsafe.Sizeof(c.ord)},
		{"RuntimeConstraints", unsafe.Offsetof(c.RuntimeConstraints), unsafe.Sizeof(c.RuntimeConstraints)},
		{"FirstSeenAt", unsafe.Offsetof(c.FirstSeenAt), unsafe.Sizeof(c.FirstSeenAt)},
	}
	for _, f := range hot {
		if f.off+f.size > 2*line {
			t.Errorf("%s at bytes %d–%d: past the record's first two cache lines", f.name, f.off, f.off+f.size)
		}
	}
	// What the scheduler's touch loads to bring in each line.
	if off := unsafe.Offsetof(c.State); off >= line {
		t.Errorf("State at byte %d: not in the first cache line", off)
	}
	if off := unsafe.Offsetof(c.FirstSeenAt); off < line || off >= 2*line {
		t.Errorf("FirstSeenAt at byte %d: not in the second cache line", off)
	}
	if size := unsafe.Sizeof(c); size > 512 {
		t.Errorf("a record is %d bytes: past the 512-byte size class (a pass walks 12 %% more memory)", size)
	}
	// The tail walk reads a key and an entry per waiting container, and
	// every change to the order shifts them: an entry is 16 bytes.
	if size := unsafe.Sizeof(entry{}); size > 16 {
		t.Errorf("an entry beside the order is %d bytes, not 16", size)
	}
}
