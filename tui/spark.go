// Sparklines of the header, sampled by the clock.

package tui

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ring keeps one sample a second for the last n seconds, for a
// sparkline. Refreshes come at any pace (a change stream, a poll, a slow
// remote): sampling by the clock keeps the time axis even, and a second
// with several refreshes keeps its last value.
type ring struct {
	n    int
	vals []float64
	last int64 // unix second of the newest sample
}

// addAt records v as the value of the second containing at. Seconds with
// no refresh repeat the value before them (the state did not change, or
// was not seen to).
func (r *ring) addAt(at time.Time, v float64) {
	sec := at.Unix()
	switch {
	case len(r.vals) == 0:
	case sec == r.last:
		r.vals[len(r.vals)-1] = v
		return
	case sec > r.last:
		prev := r.vals[len(r.vals)-1]
		for gap := min(sec-r.last-1, int64(r.n)); gap > 0; gap-- {
			r.push(prev)
		}
	default: // the clock went back: start again
		r.vals = r.vals[:0]
	}
	r.last = sec
	r.push(v)
}

func (r *ring) push(v float64) {
	if len(r.vals) == r.n {
		copy(r.vals, r.vals[1:])
		r.vals[len(r.vals)-1] = v
		return
	}
	r.vals = append(r.vals, v)
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// spark renders the last w samples scaled from zero to their maximum, so
// that a queue moving between 38 and 40 reads as nearly full, not as one
// that empties, and a constant cost as a flat line at full height. Zero
// is a blank (nothing), not the lowest bar.
func (r *ring) spark(w int) string {
	vs := r.window(w)
	if len(vs) == 0 {
		return strings.Repeat(" ", w)
	}
	hi := slices.Max(vs)
	var b strings.Builder
	// The newest second at the right edge, as on a time axis.
	b.WriteString(strings.Repeat(" ", w-len(vs)))
	for _, v := range vs {
		switch {
		case v <= 0 || hi <= 0:
			b.WriteByte(' ')
		default:
			i := int(math.Round(v / hi * float64(len(sparkRunes)-1)))
			b.WriteRune(sparkRunes[min(max(i, 0), len(sparkRunes)-1)])
		}
	}
	return b.String()
}

// window returns the last w samples.
func (r *ring) window(w int) []float64 {
	vs := r.vals
	if len(vs) > w {
		vs = vs[len(vs)-w:]
	}
	return vs
}

// scale labels the range of the last w samples: "0–40", so the height of
// a bar can be read as a number.
func (r *ring) scale(w int, format func(float64) string) string {
	vs := r.window(w)
	hi := 0.0
	if len(vs) > 0 {
		hi = max(slices.Max(vs), 0)
	}
	return "0–" + format(hi)
}

func fmtCount(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func fmtPrice(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
