package trackerhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
)

// A write retried after a rate-limit answer is another request the
// tracker counts: it takes its share of the secondary limit again, so with
// room for one write a minute the retry goes a minute after the first
// send, not at the refusal's one-second Retry-After.
func TestRetriedWriteIsPaced(t *testing.T) {
	clock := trackerhttptest.NewClock(time.Unix(1_700_000_000, 0))
	var mu sync.Mutex
	var sent []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, clock.Now())
		first := len(sent) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "You have exceeded a secondary rate limit", http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	limits := trackerhttp.RateLimits{Name: "one-a-minute", Secondary: []trackerhttp.Secondary{{Name: "writes",
		Cost:    func(r *http.Request) int { return map[bool]int{true: 0, false: 1}[r.Method == http.MethodGet] },
		Windows: []trackerhttp.Window{{Max: 1, Per: time.Minute}}}}}
	hc := &http.Client{Transport: trackerhttp.NewTransport(nil, trackerhttp.Options{Clock: clock.Now, Sleep: clock.Sleep,
		RateLimits: limits, Budget: budget.New(redistest.Start(t).Client(t), clock.Now), PaceSecondary: true, MaxWait: time.Hour, CacheEntries: -1})}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/labels", strings.NewReader(`{"labels":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token t")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != http.StatusCreated || len(sent) != 2 {
		t.Fatalf("status %d after %d sends, want 201 after 2", resp.StatusCode, len(sent))
	}
	if gap := sent[1].Sub(sent[0]); gap < time.Minute {
		t.Errorf("retry sent %v after the first write, want at least a minute (the limit's window)", gap)
	}
}
