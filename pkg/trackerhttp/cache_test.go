package trackerhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A PATCH answered with the resource and its ETag primes the cache, so the
// next GET of the same URL is conditional and its 304 is served from the
// PATCH's body, even when the PATCH asked for another media type (go-github
// sends a preview Accept on GET and its default on PATCH).
func TestPatchPrimesConditionalGet(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		version = 1
		seenINM []string
		full    int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPatch {
			version++
		}
		etag := `W/"v` + strconv.Itoa(version) + `"`
		w.Header().Set("ETag", etag)
		if r.Method == http.MethodGet {
			seenINM = append(seenINM, r.Header.Get("If-None-Match"))
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			full++
		}
		_, _ = io.WriteString(w, `{"version":`+strconv.Itoa(version)+`}`)
	}))
	defer srv.Close()
	c := client(Options{})

	_, _ = get(t, c, srv.URL+"/issue", "token a")
	patch := func(auth string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/issue", strings.NewReader(`{}`))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Accept", "application/vnd.github.v3+json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if want := `{"version":` + strconv.Itoa(version) + `}`; string(body) != want {
			t.Fatalf("PATCH body %q, want %q", body, want)
		}
	}
	patch("token a")
	resp, body := get(t, c, srv.URL+"/issue", "token a")
	if body != `{"version":2}` || resp.Header.Get(FromCacheHeader) != "1" {
		t.Fatalf("GET after PATCH: %q cache=%q", body, resp.Header.Get(FromCacheHeader))
	}
	// A GET answered 200 afterwards is newer than the PATCH and wins.
	mu.Lock()
	version = 5
	mu.Unlock()
	_, body = get(t, c, srv.URL+"/issue", "token a")
	if body != `{"version":5}` {
		t.Fatalf("GET after change: %q", body)
	}
	resp, body = get(t, c, srv.URL+"/issue", "token a")
	if body != `{"version":5}` || resp.Header.Get(FromCacheHeader) != "1" {
		t.Fatalf("revalidated GET: %q cache=%q", body, resp.Header.Get(FromCacheHeader))
	}
	// Another token's GET is not served from this token's PATCH.
	patch("token a")
	_, body = get(t, c, srv.URL+"/issue", "token b")
	if body != `{"version":6}` {
		t.Fatalf("other token: %q", body)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []string{"", `W/"v2"`, `W/"v2"`, `W/"v5"`, ""}
	if strings.Join(seenINM, ",") != strings.Join(want, ",") {
		t.Errorf("If-None-Match sent = %q, want %q", seenINM, want)
	}
	if full != 3 {
		t.Errorf("full GETs = %d, want 3", full)
	}
}
