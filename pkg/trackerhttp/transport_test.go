package trackerhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTime is a clock whose Sleep advances it, so rate-limit waits take no
// wall time and the test can see exactly what was waited.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Unix(1_700_000_000, 0)} }

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return nil
}

func (f *fakeTime) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

func (f *fakeTime) options() Options {
	return Options{Clock: f.Now, Sleep: f.Sleep}
}

func client(opts Options) *http.Client {
	return &http.Client{Transport: NewTransport(ownTransport(), opts)}
}

// ownTransport is a transport of the test's own: httptest.Server.Close
// closes http.DefaultTransport's idle connections, which would break a
// request of a test running in parallel.
func ownTransport() *http.Transport {
	return http.DefaultTransport.(*http.Transport).Clone()
}

func get(t *testing.T, c *http.Client, url, auth string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestConditionalGet(t *testing.T) {
	t.Parallel()
	var (
		mu         sync.Mutex
		version    = 1
		full, hits int
		seenINM    []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		etag := `W/"v` + strconv.Itoa(version) + `"`
		seenINM = append(seenINM, r.Header.Get("If-None-Match"))
		hits++
		w.Header().Set("ETag", etag)
		w.Header().Set("X-RateLimit-Remaining", "4999")
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full++
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"version":`+strconv.Itoa(version)+`}`)
	}))
	defer srv.Close()
	c := client(Options{})

	resp, body := get(t, c, srv.URL+"/issue", "token a")
	if resp.StatusCode != 200 || body != `{"version":1}` || resp.Header.Get(FromCacheHeader) != "" {
		t.Fatalf("first GET: %d %q cache=%q", resp.StatusCode, body, resp.Header.Get(FromCacheHeader))
	}
	resp, body = get(t, c, srv.URL+"/issue", "token a")
	if resp.StatusCode != 200 || body != `{"version":1}` || resp.Header.Get(FromCacheHeader) != "1" {
		t.Fatalf("revalidated GET: %d %q cache=%q", resp.StatusCode, body, resp.Header.Get(FromCacheHeader))
	}
	if got := resp.Header.Get("ETag"); got != `W/"v1"` {
		t.Errorf("cached ETag = %q", got)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("cached Content-Type = %q", got)
	}
	// Another token must not be served the first token's entry.
	_, _ = get(t, c, srv.URL+"/issue", "token b")

	mu.Lock()
	version = 2
	mu.Unlock()
	resp, body = get(t, c, srv.URL+"/issue", "token a")
	if body != `{"version":2}` || resp.Header.Get(FromCacheHeader) != "" || resp.Header.Get("ETag") != `W/"v2"` {
		t.Fatalf("changed resource: %q cache=%q etag=%q", body, resp.Header.Get(FromCacheHeader), resp.Header.Get("ETag"))
	}
	_, body = get(t, c, srv.URL+"/issue", "token a")
	if body != `{"version":2}` {
		t.Fatalf("after change, cached body %q", body)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []string{"", `W/"v1"`, "", `W/"v1"`, `W/"v2"`}
	if strings.Join(seenINM, ",") != strings.Join(want, ",") {
		t.Errorf("If-None-Match sent = %q, want %q", seenINM, want)
	}
	if hits != 5 || full != 3 {
		t.Errorf("hits=%d full=%d, want 5 and 3", hits, full)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	var conditional atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"`+r.URL.Path+`"`)
		if r.Header.Get("If-None-Match") != "" {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	defer srv.Close()
	rt := NewTransport(ownTransport(), Options{CacheEntries: 2})
	c := &http.Client{Transport: rt}
	for _, p := range []string{"/a", "/b", "/a", "/c"} { // /b is least recently used when /c arrives
		get(t, c, srv.URL+p, "")
	}
	if n := conditional.Load(); n != 1 {
		t.Fatalf("conditional GETs = %d, want 1 (the second /a)", n)
	}
	if _, body := get(t, c, srv.URL+"/b", ""); body != "/b" {
		t.Fatalf("body %q", body)
	}
	if n := conditional.Load(); n != 1 {
		t.Fatalf("/b was served conditionally after eviction")
	}
	get(t, c, srv.URL+"/c", "")
	if n := conditional.Load(); n != 2 {
		t.Fatalf("/c not revalidated: %d", n)
	}
}

func TestCacheDisabled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			t.Errorf("conditional GET with cache disabled")
		}
		w.Header().Set("ETag", `"x"`)
		_, _ = io.WriteString(w, "x")
	}))
	defer srv.Close()
	c := client(Options{CacheEntries: -1})
	get(t, c, srv.URL, "")
	get(t, c, srv.URL, "")
}

func TestRetryAfter429(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"labels":["a"]}` {
			t.Errorf("attempt %d body %q", calls.Load(), body)
		}
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, "slow down")
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := client(ft.options())
	resp, err := c.Post(srv.URL, "application/json", strings.NewReader(`{"labels":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || calls.Load() != 2 {
		t.Fatalf("status %d after %d calls", resp.StatusCode, calls.Load())
	}
	if s := ft.Sleeps(); len(s) != 1 || s[0] != 7*time.Second {
		t.Fatalf("sleeps = %v, want [7s]", s)
	}
}

func TestRetryPrimaryLimitUntilReset(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	reset := ft.Now().Add(20 * time.Second)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if ft.Now().Before(reset) {
			t.Errorf("retried before reset")
		}
		w.Header().Set("X-RateLimit-Remaining", "5000")
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	resp, body := get(t, client(ft.options()), srv.URL, "token x")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if s := ft.Sleeps(); len(s) != 1 || s[0] != 20*time.Second {
		t.Fatalf("sleeps = %v, want [20s]", s)
	}
}

func TestHoldsRequestsWhileExhausted(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	reset := ft.Now().Add(5 * time.Second)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		} else {
			if ft.Now().Before(reset) {
				t.Errorf("request sent before reset")
			}
			w.Header().Set("X-RateLimit-Remaining", "4999")
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := client(ft.options())
	get(t, c, srv.URL, "")
	if len(ft.Sleeps()) != 0 {
		t.Fatalf("slept on a successful response")
	}
	get(t, c, srv.URL+"/next", "")
	get(t, c, srv.URL+"/after", "")
	if s := ft.Sleeps(); len(s) != 1 || s[0] != 5*time.Second {
		t.Fatalf("sleeps = %v, want one 5s hold", s)
	}
}

func TestHoldBeyondMaxWaitFailsFast(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(ft.Now().Add(time.Hour).Unix(), 10))
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := client(ft.options())
	get(t, c, srv.URL, "")
	_, err := c.Get(srv.URL)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("held request reached the server")
	}
	// Other credentials have their own budget.
	get(t, c, srv.URL, "token other")
	if calls.Load() != 2 {
		t.Fatalf("other credentials were held")
	}
}

func TestLongRetryAfterIsReturned(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	resp, _ := get(t, client(ft.options()), srv.URL, "")
	if resp.StatusCode != http.StatusTooManyRequests || len(ft.Sleeps()) != 0 {
		t.Fatalf("status %d sleeps %v", resp.StatusCode, ft.Sleeps())
	}
}

func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	resp, _ := get(t, client(ft.options()), srv.URL, "")
	if resp.StatusCode != http.StatusTooManyRequests || calls.Load() != MaxRetries+1 {
		t.Fatalf("status %d after %d calls", resp.StatusCode, calls.Load())
	}
}

func TestUnreplayableBodyIsNotRetried(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	// A plain io.Reader gives the request no GetBody.
	req, err := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader("x")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client(ft.options()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || calls.Load() != 1 {
		t.Fatalf("status %d after %d calls", resp.StatusCode, calls.Load())
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := client(Options{Sleep: func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestWriterHeader(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method] = r.Header.Get(WriterHeader)
		mu.Unlock()
	}))
	defer srv.Close()
	c := client(Options{Writer: "replica-1/claim"})
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch} {
		req, _ := http.NewRequest(m, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[http.MethodGet] != "" || seen[http.MethodPost] != "replica-1/claim" || seen[http.MethodPatch] != "replica-1/claim" {
		t.Fatalf("writer headers = %v", seen)
	}
}
