package engine

import (
	"testing"
	"time"
)

// Steps are held minPassGap apart, and a long one holds the next off for
// passShare times its length from its start, so that passes take at most
// 1/passShare of a core however often changes wake the loop
// (docs/design.md §5); a clock set back holds nothing off.
func TestStepPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p stepPacer
	if d := p.wait(t0); d != 0 {
		t.Fatalf("before any step: wait %s, want none", d)
	}
	p.ran(t0, t0) // a step that took no time (a fake clock, a skipped pass)
	for _, c := range []struct {
		at   time.Duration
		want time.Duration
	}{{0, minPassGap}, {minPassGap / 2, minPassGap / 2}, {minPassGap, 0}, {time.Hour, 0}, {-time.Second, 0}} {
		if d := p.wait(t0.Add(c.at)); d != c.want {
			t.Errorf("after a step of no time, at +%s: wait %s, want %s", c.at, d, c.want)
		}
	}

	long := 200 * time.Millisecond // a pass at a million
	p.ran(t0, t0.Add(long))
	for _, c := range []struct {
		at   time.Duration
		want time.Duration
	}{{long, (passShare - 1) * long}, {passShare*long - time.Millisecond, time.Millisecond}, {passShare * long, 0}} {
		if d := p.wait(t0.Add(c.at)); d != c.want {
			t.Errorf("after a step of %s, at +%s: wait %s, want %s", long, c.at, d, c.want)
		}
	}

	short := 5 * time.Millisecond // shorter than minPassGap/passShare: the gap rules
	p.ran(t0, t0.Add(short))
	if d := p.wait(t0.Add(short)); d != minPassGap-short {
		t.Errorf("after a step of %s: wait %s, want %s", short, d, minPassGap-short)
	}
}
