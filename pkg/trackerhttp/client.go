package trackerhttp

import (
	"net/http"
	"time"

	"go.uber.org/zap"
)

// ClientTimeout bounds one tracker API call, waits for rate limits included.
const ClientTimeout = 30 * time.Second

// NewClient is the HTTP client every tracker uses unless one is injected:
// this package's transport (rate-limit waits, conditional-GET cache, the
// writer header) over http.DefaultTransport.
func NewClient(log *zap.Logger, writer string) *http.Client {
	if log == nil {
		log = zap.NewNop()
	}
	return NewClientWith(Options{Logger: log.Named("http"), Writer: writer})
}

// ClientOr is hc, or when nil a client with limits and log (nil: none):
// what a platform's one-off call (a listing at start) uses when its caller
// brings no client of its own.
func ClientOr(hc *http.Client, log *zap.Logger, limits RateLimits) *http.Client {
	if hc != nil {
		return hc
	}
	if log == nil {
		log = zap.NewNop()
	}
	return NewClientWith(Options{Logger: log.Named("http"), RateLimits: limits})
}

// NewClientWith is NewClient with every transport option open, for callers
// that inject more than a logger (the daemon's call metrics). It follows
// redirects only to the resource asked for (CheckRedirect).
func NewClientWith(opts Options) *http.Client {
	return &http.Client{Transport: NewTransport(http.DefaultTransport, opts), Timeout: ClientTimeout, CheckRedirect: CheckRedirect}
}
