package daemon_test

import (
	"bytes"
	"fmt"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

func TestWebhookToDoneLeavesOtherLabelsAlone(t *testing.T) {
	forEachPlatformAndIfMatchMode(t, func(t *testing.T, e *env) {
		e.startDaemon(e.config("replica-a", ""))
		theirs := []string{"bug", "日本語", "Agent-Smith:done", "other:enqueued"}
		if e.pc.FoldsCase {
			// On GitHub and Azure DevOps "Agent-Smith:done" is not a
			// look-alike but our own done label in another spelling
			// (labels fold case): the ticket would be done already.
			// labelcase_test.go and azuredevops' tests cover that.
			theirs = slices.DeleteFunc(theirs, func(l string) bool { return l == "Agent-Smith:done" })
		}
		n := e.sim.CreateIssue(e.repo, "Fix the login page", "body", theirs...)
		if err := e.sim.AddLabels(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 20*time.Second, lifecycle.Done)
		want := append(slices.Clone(theirs), "agent-smith", lifecycletest.Label(lifecycle.Done))
		if e.pc.FoldsCase {
			// Azure DevOps may list tags in its own order: compare as sets.
			// (GitHub keeps the order; as sets is no weaker here.)
			want = slices.Sorted(slices.Values(want))
		}
		// Done shows as soon as its label is added; GitHub's removal of
		// the in-progress label follows in a second call.
		eventually.Wait(t, 10*time.Second, fmt.Sprintf("labels %q", want), func() bool {
			is, _ := e.sim.Issue(e.repo, n)
			got := is.Labels
			if e.pc.FoldsCase {
				got = slices.Sorted(slices.Values(got))
			}
			return slices.Equal(got, want)
		})
		if got := e.starts(n); len(got) != 1 {
			t.Errorf("pipeline started %d times, want 1: %q", len(got), got)
		}
		// The lifecycle as written to the tracker, in order.
		if path, want := e.lifecyclePath(n), []string{"pending→enqueued", "enqueued→in-progress", "in-progress→done"}; !slices.Equal(path, want) {
			t.Errorf("transitions = %q, want %q", path, want)
		}
	})
}

func TestFailingPipelineCommentsWithOutputTail(t *testing.T) {
	forEachPlatformAndIfMatchMode(t, func(t *testing.T, e *env) {
		e.startDaemon(e.config("replica-a", ""))
		n := e.sim.CreateIssue(e.repo, "This will fail", "", "agent-smith")
		e.waitState(n, 20*time.Second, lifecycle.Failed)
		is, _ := e.sim.Issue(e.repo, n)
		if len(is.Comments) != 1 {
			t.Fatalf("want one failure comment, got %d", len(is.Comments))
		}
		c := is.Comments[0].Body
		for _, want := range []string{"exit status 7", "boom: the widget exploded", "failed; no retry configured (attempt 1)", "```"} {
			if !strings.Contains(c, want) {
				t.Errorf("failure comment lacks %q:\n%s", want, c)
			}
		}
		if slices.Contains(is.Labels, "boom: the widget exploded") {
			t.Error("pipeline output reached a label")
		}
	})
}

func TestDuplicateDeliveriesRunOnce(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startDaemon(e.config("replica-a", ""))
		e.sim.SetFaults(trackersim.Faults{Duplicate: 4})
		n := e.sim.CreateIssue(e.repo, "Deliver me five times", "")
		if err := e.sim.AddLabels(e.repo, n, "agent-smith"); err != nil {
			t.Fatal(err)
		}
		e.waitState(n, 20*time.Second, lifecycle.Done)
		// Later redeliveries and events from our own writes must not start a
		// second run: wait until the sim has sent everything it will send.
		eventually.Wait(t, 10*time.Second, "deliveries to drain", func() bool {
			st := e.sim.Stats()
			return st.Deliveries >= 5
		})
		if got := e.starts(n); len(got) != 1 {
			t.Errorf("pipeline started %d times, want 1: %q", len(got), got)
		}
	})
}

func TestReceiverRejectsBadRequestsWithoutSideEffects(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", "webhook: {max_body_bytes: 4096}\n"))
	n := e.sim.CreateIssue(repo, "Target", "", "agent-smith")
	// Created with the label, an issues/opened delivery is on its way; wait for
	// that run so the checks below see a settled ticket.
	e.waitState(n, 20*time.Second, lifecycle.Done)
	before, _ := e.sim.Issue(repo, n)
	url := "http://" + d.Addr() + "/webhooks/github"
	body := []byte(fmt.Sprintf(`{"action":"labeled","issue":{"number":%d,"state":"open","labels":[{"name":"agent-smith"}]},"repository":{"full_name":%q}}`, n, repo))
	post := func(body []byte, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	sign := func(b []byte, secret string) string { return github.SignatureHeader(b, []byte(secret)) }
	cases := []struct {
		name string
		body []byte
		hdr  map[string]string
		want int
	}{
		{"forged signature", body, map[string]string{"X-Hub-Signature-256": sign(body, "wrong")}, 401},
		{"missing signature", body, nil, 401},
		{"oversized body", bytes.Repeat([]byte("x"), 8192), map[string]string{"X-Hub-Signature-256": sign(bytes.Repeat([]byte("x"), 8192), testSecret)}, 413},
		{"malformed json", []byte(`{"action":`), map[string]string{"X-Hub-Signature-256": sign([]byte(`{"action":`), testSecret)}, 400},
		{"unknown event", []byte(`{}`), map[string]string{"X-GitHub-Event": "star", "X-Hub-Signature-256": sign([]byte(`{}`), testSecret)}, 202},
		{"unknown repository", []byte(`{"action":"labeled","issue":{"number":1,"state":"open"},"repository":{"full_name":"evil/repo"}}`),
			map[string]string{"X-Hub-Signature-256": sign([]byte(`{"action":"labeled","issue":{"number":1,"state":"open"},"repository":{"full_name":"evil/repo"}}`), testSecret)}, 202},
		{"wrong content type", body, map[string]string{"Content-Type": "text/plain", "X-Hub-Signature-256": sign(body, testSecret)}, 415},
	}
	for _, c := range cases {
		if got, b := post(c.body, c.hdr); got != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, got, c.want, b)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	after, _ := e.sim.Issue(repo, n)
	if !slices.Equal(before.Labels, after.Labels) || len(e.starts(n)) != 1 {
		t.Errorf("rejected requests changed the ticket: %q → %q, %d runs", before.Labels, after.Labels, len(e.starts(n)))
	}
	// A rotated-in secret (the second of two) authenticates.
	if got, b := post(body, map[string]string{"X-Hub-Signature-256": sign(body, testSecret), "X-GitHub-Delivery": "d-1"}); got != 202 {
		t.Errorf("good delivery: status %d (%s)", got, b)
	}
	if got, b := post(body, map[string]string{"X-Hub-Signature-256": sign(body, testSecret), "X-GitHub-Delivery": "d-1"}); got != 200 || !strings.Contains(b, "duplicate") {
		t.Errorf("replayed delivery: status %d (%s), want 200 duplicate", got, b)
	}
}

func TestRedisRestartedEmptyEveryTicketSettles(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		cfg := e.config("replica-a", "")
		cfg.Consumer.Concurrency = 1
		e.startDaemon(cfg)
		held := e.sim.CreateIssue(e.repo, "hold: in progress during the wipe", "", "agent-smith")
		e.waitState(held, 20*time.Second, lifecycle.InProgress)
		var queued []int
		for i := range 3 {
			queued = append(queued, e.sim.CreateIssue(e.repo, fmt.Sprintf("queued %d", i), "", "agent-smith"))
		}
		for _, n := range queued {
			e.waitState(n, 20*time.Second, lifecycle.Enqueued)
		}
		e.redis.Kill()
		e.redis.Restart()
		e.openGate()
		for _, n := range append([]int{held}, queued...) {
			e.waitState(n, 60*time.Second, lifecycle.Done, lifecycle.Failed)
		}
		if s := e.state(held); s != lifecycle.Done {
			t.Errorf("held ticket ended %s, want done", s)
		}
	})
}

func TestRedisDownAnswers503AndReadyzTurnsFalse(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", ""))
	base := "http://" + d.Addr()
	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz = %d with Redis up", got)
	}
	n := e.sim.CreateIssue(repo, "arrives while Redis is down", "")
	e.redis.Kill()
	body := []byte(fmt.Sprintf(`{"action":"labeled","issue":{"number":%d,"state":"open","labels":[{"name":"agent-smith"}]},"repository":{"full_name":%q}}`, n, repo))
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", "while-down")
	req.Header.Set("X-Hub-Signature-256", github.SignatureHeader(body, []byte(testSecret)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("delivery with Redis down: %d, want 503", resp.StatusCode)
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d with Redis down, want 503", got)
	}
	if got := status("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz = %d, want 200 while the process runs", got)
	}
	// Redis comes back (empty); the daemon resumes on its own and the
	// ticket, labelled meanwhile by a human, is picked up by the redelivery.
	e.redis.Restart()
	eventually.Wait(t, 10*time.Second, "/readyz to recover", func() bool { return status("/readyz") == http.StatusOK })
	if err := e.sim.AddLabels(repo, n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	// A claim can straddle the restart: its lock taken on the new Redis,
	// its push and release refused while the connection flaps. The ticket
	// is then Enqueued with no queue entry and a lock nobody releases; the
	// reconciler re-pushes it once the lock's TTL (5 s here) and the
	// enqueued grace (30 s default) have passed (seen once in CI).
	e.waitState(n, 45*time.Second, lifecycle.Done)
}

func TestOneDaemonServesFourPlatformsAtOnce(t *testing.T) {
	e := newEnv(t)
	e.startDaemon(e.config("replica-a", "", simcases.All...))
	issues := map[string]int{}
	for _, pc := range simcases.All {
		issues[pc.Name] = e.sim.CreateIssue(pc.Repo, "four at once ("+pc.Name+")", "", "keep")
		if err := e.sim.AddLabels(pc.Repo, issues[pc.Name], "agent-smith"); err != nil {
			t.Fatal(err)
		}
	}
	for _, pc := range simcases.All {
		n := issues[pc.Name]
		eventually.Wait(t, 30*time.Second, pc.Name+" ticket to reach done", func() bool {
			is, _ := e.sim.Issue(pc.Repo, n)
			return labels.StateOf(is.Labels) == lifecycle.Done
		})
		is, _ := e.sim.Issue(pc.Repo, n)
		if !slices.Contains(is.Labels, "keep") {
			t.Errorf("%s: labels %q lost keep", pc.Name, is.Labels)
		}
	}
}

func TestEveryPlatformRouteRefusesUnauthenticatedDeliveries(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		d := e.startDaemon(e.config("replica-a", ""))
		n := e.sim.CreateIssue(e.repo, "not triggered", "")
		before := len(e.sim.Writes())
		url := "http://" + d.Addr() + "/webhooks/" + e.pc.Name
		for _, c := range []struct {
			name string
			hdr  map[string]string
		}{
			{"no credentials", nil},
			{"wrong credentials", map[string]string{"X-Gitlab-Token": "wrong", "Authorization": "Basic d3Jvbmc6d3Jvbmc=",
				"X-Hub-Signature": "sha256=00", "X-Hub-Signature-256": "sha256=00"}},
		} {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"object_kind":"issue"}`))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want 401", c.name, resp.StatusCode)
			}
		}
		if got := len(e.sim.Writes()); got != before || e.state(n) != lifecycle.Pending {
			t.Errorf("an unauthenticated delivery changed the tracker")
		}
	})
}
