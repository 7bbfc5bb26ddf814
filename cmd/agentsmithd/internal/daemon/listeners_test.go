package daemon_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// get answers GET url's status code; hdr is added to the request.
func get(t *testing.T, url string, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The internet reaches only webhooks: the webhook listener serves the
// webhooks and the probes, nothing else; /metrics and the status page
// answer only on the admin listener.
func TestWebhookListenerServesOnlyWebhooksAndProbes(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", ""))
	hook, admin := "http://"+d.Addr(), "http://"+d.AdminAddr()
	if d.Addr() == d.AdminAddr() {
		t.Fatalf("one listener for both: %s", d.Addr())
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404, "/status": 404,
		"/status.json": 404, "/": 404, "/debug/pprof/": 404, "/webhooks/github": 405} {
		if got := get(t, hook+path); got != want {
			t.Errorf("webhook listener GET %s = %d, want %d", path, got, want)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/status": 200,
		"/status.json": 200, "/webhooks/github": 404} {
		if got := get(t, admin+path, "Authorization", "Bearer "+d.StatusToken()); got != want {
			t.Errorf("admin listener GET %s = %d, want %d", path, got, want)
		}
	}
}

// /metrics needs the status token as a bearer token, as the status page
// does: that is how Prometheus scrapes. So do the admin listener's probes;
// the probes an orchestrator calls, without a token, are the webhook
// listener's.
func TestMetricsRequireTheStatusToken(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", "status: {token_env: E2E_STATUS_TOKEN}\n"))
	admin := "http://" + d.AdminAddr()
	if got := get(t, admin+"/metrics"); got != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d, want 401", got)
	}
	if got := get(t, admin+"/metrics", "Authorization", "Bearer wrong"); got != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token = %d, want 401", got)
	}
	if got := get(t, admin+"/metrics", "Authorization", "Bearer "+testStatusToken); got != http.StatusOK {
		t.Errorf("GET /metrics with the token = %d, want 200", got)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if got := get(t, admin+path); got != http.StatusUnauthorized {
			t.Errorf("admin listener GET %s without the token = %d, want 401", path, got)
		}
		if got := get(t, "http://"+d.Addr()+path); got != http.StatusOK {
			t.Errorf("webhook listener GET %s without a token = %d, want 200 (probes carry no token)", path, got)
		}
	}
}

// One host opening many idle connections (~20k slow ones would run the
// daemon out of file descriptors) gets no more than its per-address
// cap; the rest are closed at once. /readyz on the admin listener and a
// delivery from another address still answer.
func TestConnectionFloodFromOneHost(t *testing.T) {
	const flood, perAddr = 200, 50
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", fmt.Sprintf("webhook: {max_connections: 120, max_connections_per_address: %d}\n", perAddr)))
	n := e.sim.CreateIssue(repo, "Delivered while flooded", "", "agent-smith")

	// Dial from 127.0.0.1 and watch each connection: a refused one reads
	// EOF (or a reset) at once.
	var mu sync.Mutex
	closed := 0
	for range flood {
		c, err := net.DialTimeout("tcp", d.Addr(), 5*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		go func() {
			if _, err := c.Read(make([]byte, 1)); err != nil {
				mu.Lock()
				closed++
				mu.Unlock()
			}
		}()
	}
	admin := "http://" + d.AdminAddr()
	// The sim's own deliveries come from 127.0.0.1 too and may hold a
	// slot (keep-alive), so at least flood-perAddr are refused.
	var refused float64
	eventually.Wait(t, 10*time.Second, "the over-cap connections refused", func() bool {
		refused, _ = scrapeMetrics(t, d).value("agentsmith_webhook_connections_refused_total", map[string]string{"reason": "per_address"})
		return refused >= flood-perAddr
	})
	t.Logf("%d connections from one address, cap %d: %v refused", flood, perAddr, refused)
	mu.Lock()
	if closed < flood-perAddr {
		t.Errorf("%d connections seen closed, want at least %d", closed, flood-perAddr)
	}
	mu.Unlock()
	if got := get(t, admin+"/readyz", "Authorization", "Bearer "+d.StatusToken()); got != http.StatusOK {
		t.Errorf("admin /readyz during the flood = %d, want 200", got)
	}

	// A tracker at another address delivers a signed webhook.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	body := []byte(fmt.Sprintf(`{"action":"labeled","issue":{"number":%d,"state":"open","labels":[{"name":"agent-smith"}]},"repository":{"full_name":%q}}`, n, repo))
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.Addr()+"/webhooks/github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("flood-%d", time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", github.SignatureHeader(body, []byte(testSecret)))
	resp, err := other.Do(req)
	if err != nil {
		t.Fatalf("delivery from 127.0.0.2 during the flood: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("delivery from 127.0.0.2 = %d %s, want 202", resp.StatusCode, answer)
	}
	e.waitState(n, 20*time.Second, lifecycle.Done)
}
