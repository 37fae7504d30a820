package clock

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 30 * time.Second}, {1000, 30 * time.Second}} {
		if got := Backoff(time.Second, 30*time.Second, c.n); got != c.want {
			t.Errorf("Backoff(1s, 30s, %d) = %s, want %s", c.n, got, c.want)
		}
	}
}
