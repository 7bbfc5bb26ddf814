package trackerhttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A write held by a rate-limit wait is fenced again right before it is sent.
func TestFenceRunsAfterRateLimitWait(t *testing.T) {
	var writes atomic.Int32
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		writes.Add(1)
	}))
	defer srv.Close()
	var owned atomic.Bool
	owned.Store(true)
	rt := NewTransport(nil, Options{Sleep: func(ctx context.Context, d time.Duration) error {
		owned.Store(false) // ownership is lost while the request waits
		return nil
	}})
	fence := func(context.Context) error {
		if !owned.Load() {
			return errors.New("lost")
		}
		return nil
	}
	req, _ := http.NewRequestWithContext(WithFence(context.Background(), fence), http.MethodPatch, srv.URL, strings.NewReader("{}"))
	if _, err := (&http.Client{Transport: rt}).Do(req); err == nil || !strings.Contains(err.Error(), "fenced off") {
		t.Fatalf("err = %v, want the write fenced off after the wait", err)
	}
	if writes.Load() != 0 {
		t.Error("a fenced-off write reached the server")
	}
	// Reads are never fenced.
	get, _ := http.NewRequestWithContext(WithFence(context.Background(), fence), http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: rt}).Do(get)
	if err != nil {
		t.Fatalf("GET fenced: %v", err)
	}
	resp.Body.Close()
}
