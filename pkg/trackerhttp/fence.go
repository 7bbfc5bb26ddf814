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
// request unsent.
func WithFence(ctx context.Context, fence func(context.Context) error) context.Context {
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
