// The limit a caller puts on a runner call, passed to the executor that
// carries it.

package runner

import (
	"context"
	"time"
)

type callLimitKey struct{}

// WithCallLimit says that the caller bounds the calls made with ctx to d
// itself (the pool, on its own clock, from timeout_runner_call): an
// executor's own bound on a command must then not cut one sooner. An
// install of the 78 MB runner given minutes by the operator was cut at the
// SSH executor's default minute.
func WithCallLimit(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, callLimitKey{}, d)
}

// CallLimit is what WithCallLimit put in ctx, if anything.
func CallLimit(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(callLimitKey{}).(time.Duration)
	return d, ok
}
