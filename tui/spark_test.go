package tui

import (
	"strings"
	"testing"
	"time"
)

func TestSparkline(t *testing.T) {
	sec := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	cases := []struct {
		name  string
		add   func(r *ring)
		want  string
		scale string
	}{
		{"a queue moving 38-40 stays near full", func(r *ring) {
			for i, v := range []float64{38, 40, 39, 38, 40} {
				r.addAt(sec(i), v)
			}
		}, "     █████", "0–40"},
		{"a constant cost is a full flat line", func(r *ring) {
			for i := range 4 {
				r.addAt(sec(i), 0.35)
			}
		}, "      ████", "0–0.35"},
		{"zero is blank", func(r *ring) {
			r.addAt(sec(0), 0)
			r.addAt(sec(1), 8)
			r.addAt(sec(2), 4)
		}, "        █▅", "0–8"},
		{"one sample a second: the last refresh of a second counts", func(r *ring) {
			r.addAt(sec(0), 8)
			r.addAt(sec(0).Add(300*time.Millisecond), 2)
			r.addAt(sec(0).Add(900*time.Millisecond), 4)
			r.addAt(sec(1), 8)
		}, "        ▅█", "0–8"},
		{"seconds without a refresh repeat the value before them", func(r *ring) {
			r.addAt(sec(0), 8)
			r.addAt(sec(3), 4)
		}, "      ███▅", "0–8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &ring{n: sparkLen}
			tc.add(r)
			format := fmtCount
			if strings.Contains(tc.scale, ".") {
				format = fmtPrice
			}
			if got := r.spark(10); got != tc.want {
				t.Errorf("spark = %q, want %q", got, tc.want)
			}
			if got := r.scale(10, format); got != tc.scale {
				t.Errorf("scale = %q, want %q", got, tc.scale)
			}
		})
	}
}

// The ring keeps sparkLen seconds; older ones fall out.
func TestSparkRingBounded(t *testing.T) {
	r := &ring{n: 5}
	for i := range 12 {
		r.addAt(t0.Add(time.Duration(i)*time.Second), float64(i))
	}
	if len(r.vals) != 5 || r.vals[0] != 7 || r.vals[4] != 11 {
		t.Errorf("ring = %v, want the last 5 seconds 7..11", r.vals)
	}
}
