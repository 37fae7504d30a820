package runner

import (
	"bytes"
	"testing"
)

func TestTailLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 0, "a\nb\nc\n"},
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"", 3, ""},
	} {
		if got := string(TailLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("TailLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// DroppedFor cuts whole KiB, the fewest that make the output fit, and
// nothing from an output that fits or has no limit.
func TestDroppedFor(t *testing.T) {
	for _, tc := range []struct{ total, limit, want int64 }{
		{100, 0, 0},
		{4096, 4096, 0},
		{4097, 4096, 1024},
		{5120, 4096, 1024},
		{5121, 4096, 2048},
		{10 << 20, 4 << 20, 6 << 20},
		{300, 100, 300}, // a limit under the grain keeps nothing
	} {
		if got := DroppedFor(tc.total, tc.limit); got != tc.want {
			t.Errorf("DroppedFor(%d, %d) = %d, want %d", tc.total, tc.limit, got, tc.want)
		}
	}
}

func TestOutputCut(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcde\n"), 1000) // 16,000 bytes
	o := Output{Data: data, Dropped: 7}.Cut(4096)
	if o.Dropped != 7+12*1024 || !bytes.Equal(o.Data, data[12*1024:]) {
		t.Fatalf("Cut(4096): %d bytes kept, dropped %d", len(o.Data), o.Dropped)
	}
	if o := (Output{Data: data}).Cut(0); len(o.Data) != len(data) || o.Dropped != 0 {
		t.Fatalf("Cut(0) dropped %d", o.Dropped)
	}
}
