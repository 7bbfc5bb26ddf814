package trackerhttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

type callLog struct {
	mu    sync.Mutex
	calls []Call
}

func (l *callLog) ObserveCall(c Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

func (l *callLog) summary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.calls {
		status := "-"
		if c.Status != 0 {
			status = strconv.Itoa(c.Status)
		}
		out = append(out, c.Method+" "+status+" "+itoa(c.Remaining))
	}
	return out
}

func itoa(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// Every request that reaches the network is one Call with its real status:
// a 429 and its retry are two calls, a 304 revalidation is a 304 (the cache
// turns it into a 200 for the SDK), a write the fence stopped is a call that
// got no status.
func TestObserverSeesNetworkCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	limited := 1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/gitlab":
			w.Header().Set("RateLimit-Remaining", "1999")
		case limited > 0:
			limited--
			w.Header().Set("Retry-After", "1")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		default:
			w.Header().Set("X-RateLimit-Remaining", "4998")
		}
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	ft := newFakeTime()
	log := &callLog{}
	opts := ft.options()
	opts.Observer = log
	c := client(opts)

	get(t, c, srv.URL+"/issue", "token a") // 429, then 200 after the wait
	resp, _ := get(t, c, srv.URL+"/issue", "token a")
	if resp.StatusCode != http.StatusOK || resp.Header.Get(FromCacheHeader) != "1" {
		t.Fatalf("revalidated GET = %d cache=%q", resp.StatusCode, resp.Header.Get(FromCacheHeader))
	}
	get(t, c, srv.URL+"/gitlab", "token a")

	fenced := WithFence(context.Background(), func(context.Context) error { return errors.New("lost") })
	req, _ := http.NewRequestWithContext(fenced, http.MethodPatch, srv.URL+"/issue", strings.NewReader(`{}`))
	if _, err := c.Do(req); err == nil {
		t.Fatal("fenced write went out")
	}

	want := []string{"GET 429 0", "GET 200 4998", "GET 304 4998", "GET 200 1999", "PATCH - -"}
	if got := log.summary(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

func TestRemainingQuota(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		h    http.Header
		want int
	}{
		{http.Header{}, -1},
		{http.Header{"X-Ratelimit-Remaining": {"12"}}, 12},
		{http.Header{"Ratelimit-Remaining": {"7"}}, 7},
		{http.Header{"X-Ratelimit-Remaining": {"garbage"}, "Ratelimit-Remaining": {"3"}}, 3},
		{http.Header{"X-Ratelimit-Remaining": {"-5"}}, -1},
	} {
		if got := RemainingQuota(tc.h); got != tc.want {
			t.Errorf("RemainingQuota(%v) = %d, want %d", tc.h, got, tc.want)
		}
	}
}
