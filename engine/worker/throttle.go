// Cloud errors and rate limits: pausing and pacing cloud calls.

package worker

import (
	"fmt"
	"log/slog"
	"time"

	"dispatch-tui/cloud"
)

// cloudErrLocked handles a failed cloud call: a rate-limit error pauses
// every cloud call; every error is logged and becomes an event.
func (p *Pool) cloudErrLocked(now time.Time, id cloud.InstanceID, op string, err error) {
	if rl, ok := cloud.AsRateLimit(err); ok {
		until := rl.RetryAfter
		if !until.After(now) {
			until = now.Add(time.Second)
		}
		if until.After(p.pausedUntil) {
			p.pausedUntil = until
		}
	}
	p.eventLocked(now, id, EventCloudError, fmt.Sprintf("%s failed (%s): %v", op, cloud.ErrorKind(err), err), slog.LevelWarn)
}

// cloudAllowedLocked reports whether a cloud call may be made now, and if
// so takes a token from the cloud-op bucket.
func (p *Pool) cloudAllowedLocked(now time.Time) bool {
	if now.Before(p.pausedUntil) {
		return false
	}
	return p.cloudBucket.take(now)
}

// bucket is a token bucket on the injected clock. rate <= 0 = unlimited.
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, now time.Time) bucket {
	b := bucket{rate: rate, burst: max(1, rate), last: now}
	b.tokens = b.burst
	return b
}

// has reports whether take(now) would succeed, taking nothing.
func (b *bucket) has(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	tokens := b.tokens
	if d := now.Sub(b.last); d > 0 {
		tokens = min(b.burst, tokens+d.Seconds()*b.rate)
	}
	return tokens >= 1
}

func (b *bucket) take(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
