// The leader's guard asked before each attempt of a mutation the SDK sends.

package ec2

// A create, terminate or tag write the pool was allowed to make may be
// sent more than once: the SDK retries a transient error, and a create
// tries the next subnet. Each of those sends asks the context's guard
// (cloud.Guard) first, so that a node whose lease ran out meanwhile sends
// nothing more (docs/design.md §11).

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"

	"dispatch-tui/cloud"
)

// guarded is the option of every mutating call: the guard step right
// after the SDK's retry step, so that it runs for each attempt.
func guarded(o *ec2.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Finalize.Insert(guardStep, "Retry", middleware.After)
	})
}

var guardStep = middleware.FinalizeMiddlewareFunc("DispatchTUILeaderGuard",
	func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if err := cloud.Guard(ctx); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, err
		}
		return next.HandleFinalize(ctx, in)
	})
