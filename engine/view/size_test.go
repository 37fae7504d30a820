package view

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"100", 100},
		{"100B", 100},
		{"1KiB", 1024},
		{"512MiB", 512 << 20},
		{"2GiB", 2 << 30},
		{"2 GiB", 2 << 30},
		{" 2gib ", 2 << 30},
		{"1.5GiB", 3 << 29},
		{"1TiB", 1 << 40},
		{"1PiB", 1 << 50},
		{"10GB", 10e9},
		{"1KB", 1000},
		{"1.5MB", 1500000},
		{"0.5KiB", 512},
		{"0.1KiB", 102}, // 102.4 rounds down
		{"0.0005KB", 1}, // 0.5 rounds up
		{"1.0000GiB", 1 << 30},
		{"8388607TiB", 8388607 << 40},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", " ", "-1", "-1GiB", "GiB", "1.", ".5GiB", "1..5GiB", "1.2.3", "1 2", "1e9",
		"2G", "2GiBs", "0x10", "1_000", "8388608TiB", "99999999999999999999",
		strings.Repeat("9", 100),
	} {
		if n, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, n)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{100, "100B"},
		{1000, "1KB"},
		{1024, "1KiB"},
		{1536, "1.5KiB"},
		{512 << 20, "512MiB"},
		{2 << 30, "2GiB"},
		{3 << 29, "1.5GiB"},
		{10e9, "10GB"},
		{1<<30 + 1, "1073741825B"},
		{-(2 << 30), "-2GiB"},
	} {
		if got := FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSizeRoundTrip(t *testing.T) {
	vals := []int64{0, 1, 999, 1000, 1023, 1024, 1025, 1 << 62, 1<<63 - 1}
	for shift := 0; shift < 63; shift++ {
		vals = append(vals, 1<<shift, 3<<shift>>1, 1<<shift+1)
	}
	for p, x := 0, int64(1); p < 18; p, x = p+1, x*10 {
		vals = append(vals, x, 15*x/10, 1234*x)
	}
	for _, n := range vals {
		if n < 0 {
			continue
		}
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
}

// FuzzParseSize: ParseSize must never panic, and what it accepts must
// survive a FormatSize round trip.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "100", "2GiB", "512MiB", "1.5GiB", "10GB", "-1", "1.", "99999999999TiB", "0.0005KB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, negative", s, n)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, FormatSize(n), back, err)
		}
	})
}

// FormatSize writes no byte SizeAlphabet does not name.
func TestSizeAlphabet(t *testing.T) {
	for _, n := range []int64{0, 1, -1, 999, 1000, 1024, 1536, 3 << 29, 1e9 + 1, 5e15, 7 << 50, -(1 << 62), -1 << 63, 1<<63 - 1} {
		if s := strings.ToLower(FormatSize(n)); strings.Trim(s, SizeAlphabet) != "" {
			t.Errorf("FormatSize(%d) = %q, outside %q", n, s, SizeAlphabet)
		}
	}
}
