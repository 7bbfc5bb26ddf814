package trackerhttp

import (
	"context"
	"fmt"
	"net/http"
)

type fenceKey struct{}

// WithFence attaches a check that the transport runs immediately before it
// sends each write made with ctx: after any rate-limit hold and before every
// retry. A check made only before calling the SDK could be minutes old by
// the time a held request goes out; this one cannot. An error aborts the
// request unsent. A fence ctx already carries still runs, first: a claim
// made under the housekeeping lease's fence and fenced by the replica's
// liveness too must pass both.
func WithFence(ctx context.Context, fence func(context.Context) error) context.Context {
	if outer, ok := ctx.Value(fenceKey{}).(func(context.Context) error); ok && outer != nil && fence != nil {
		inner := fence
		fence = func(ctx context.Context) error {
			if err := outer(ctx); err != nil {
				return err
			}
			return inner(ctx)
		}
	}
	return context.WithValue(ctx, fenceKey{}, fence)
}

// fenceGate is the innermost layer, next to the network.
type fenceGate struct{ next http.RoundTripper }

func (g fenceGate) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method) {
		if fence, ok := req.Context().Value(fenceKey{}).(func(context.Context) error); ok && fence != nil {
			if err := fence(req.Context()); err != nil {
				if req.Body != nil {
					_ = req.Body.Close()
				}
				return nil, fmt.Errorf("trackerhttp: write fenced off: %w", err)
			}
		}
	}
	return g.next.RoundTrip(req)
}
