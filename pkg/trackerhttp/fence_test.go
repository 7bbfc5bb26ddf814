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

// A second fence adds to the one ctx carries: either one refusing keeps the
// write unsent, in the order they were attached.
func TestFencesCompose(t *testing.T) {
	var writes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { writes.Add(1) }))
	defer srv.Close()
	var order []string
	fence := func(name string, err error) func(context.Context) error {
		return func(context.Context) error { order = append(order, name); return err }
	}
	client := &http.Client{Transport: NewTransport(nil, Options{})}
	for _, c := range []struct {
		outer, inner error
		sent         bool
	}{{nil, nil, true}, {errors.New("lease lost"), nil, false}, {nil, errors.New("liveness lost"), false}} {
		order = nil
		ctx := WithFence(WithFence(context.Background(), fence("lease", c.outer)), fence("liveness", c.inner))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
		before := writes.Load()
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if sent := writes.Load() > before; sent != c.sent || (err == nil) != c.sent {
			t.Errorf("outer %v inner %v: sent %v err %v, want sent %v", c.outer, c.inner, sent, err, c.sent)
		}
		if order[0] != "lease" {
			t.Errorf("fences ran in order %v, want the outer first", order)
		}
	}
}
