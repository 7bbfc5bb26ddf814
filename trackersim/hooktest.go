package trackersim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Test deliveries: each tracker but Jira lets a hook's administrator ask
// for a delivery now, so a receiver's URL and secret can be proven without
// waiting for an event. GitHub pings a repository or organisation hook
// (github_hooktest.go), GitLab sends a sample event to a project or group
// hook (gitlab_hooktest.go), Azure DevOps sends a service hook test
// notification (ado_hooktest.go). Jira has no such API: its webhook REST
// resources register, list and delete webhooks only
// (https://developer.atlassian.com/cloud/jira/platform/webhooks/#registering-a-webhook-via-the-jira-rest-api-for-connect-apps).
// The test delivery goes through the hook's queue like any other, with
// the hook's secret, so a wrong secret or an unreachable URL shows as it
// would for a real event.

// hookByID is the hook with id, of dialect ("" or "github" for GitHub).
func (s *Sim) hookByID(id int64, dialectName string) (*hookQueue, bool) {
	hs := &s.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, q := range hs.list {
		sameDialect := q.hook.Dialect == dialectName || (isGitHubHook(q.hook) && (dialectName == "" || dialectName == "github"))
		if q.id == id && sameDialect && !q.hook.System {
			return q, true
		}
	}
	return nil, false
}

// sendTest queues d on q as a test delivery, with the delivery faults
// applied as to any other, and counts it in Stats.TestDeliveries.
func (s *Sim) sendTest(q *hookQueue, d outgoing) {
	s.count(func(st *Stats) { st.TestDeliveries++ })
	drop, extra := s.faults.delivery()
	s.hooks.enqueue(q, d, drop, extra)
}

// windowLimiter allows limit requests per key in each fixed window (GitLab's
// webhook test rate limit: 5 a minute per user, project or group).
type windowLimiter struct {
	mu    sync.Mutex
	start map[string]time.Time
	n     map[string]int
}

// allow reports whether one more request for key fits the window that
// holds now, and counts it if so.
func (l *windowLimiter) allow(key string, now time.Time, limit int, window time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start == nil {
		l.start, l.n = map[string]time.Time{}, map[string]int{}
	}
	if st, ok := l.start[key]; !ok || now.Sub(st) >= window {
		l.start[key], l.n[key] = now, 0
	}
	if l.n[key] >= limit {
		return false
	}
	l.n[key]++
	return true
}

// deliverNow sends d to q's URL at once, outside the hook's queue, and
// returns the receiver's status and (at most 1 KiB of) its body, or the
// error when no answer came: GitLab's test runs the request while the API
// call waits, and answers with its outcome.
func (s *Sim) deliverNow(ctx context.Context, q *hookQueue, d outgoing) (int, string, error) {
	s.count(func(st *Stats) { st.TestDeliveries++; st.Deliveries++ })
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.hook.URL, bytes.NewReader(d.body))
	if err != nil {
		s.count(func(st *Stats) { st.DeliveryFailures++ })
		return 0, "", err
	}
	for k, v := range d.header {
		req.Header[k] = append([]string(nil), v...)
	}
	resp, err := s.hooks.client.Do(req)
	if err != nil {
		s.count(func(st *Stats) { st.DeliveryFailures++ })
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode/100 != 2 {
		s.count(func(st *Stats) { st.DeliveryFailures++ })
	}
	return resp.StatusCode, string(b), nil
}
