package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const repo = "acme/app"

// world is a real redis-server, a trackersim over HTTP and a config file
// naming both, as an operator's would.
type world struct {
	t      *testing.T
	rdb    *redis.Client
	sim    *trackersim.Sim
	cfg    *config.Config
	path   string
	labels lifecycle.Labels
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldWith(t, "")
}

// newWorldWith is newWorld with appExtra (YAML lines indented as the app
// project's fields) added to the app project.
func newWorldWith(t *testing.T, appExtra string) *world {
	t.Helper()
	r := redistest.Start(t)
	s := trackersim.New(trackersim.Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	t.Setenv("CTL_TEST_TOKEN", "ctl-test-token")
	dir := t.TempDir()
	path := filepath.Join(dir, "agentsmithd.yaml")
	yml := fmt.Sprintf(`instance_id: replica-a
redis: {addr: %q}
consumer: {work_dir: work, heartbeat_ttl: 5s, heartbeat_renew: 1s}
projects:
  - name: app
    platform: github
    base_url: %s/github/
    repo: %s
    token_env: CTL_TEST_TOKEN
    polling: {enabled: true}
    pipeline: {command: ["true"]}
%s  - name: ops
    platform: jira
    base_url: %s/jira/
    repo: OPS
    token_env: CTL_TEST_TOKEN
    jira: {email: bot@acme.example}
    polling: {enabled: true}
    pipeline: {command: ["true"]}
`, r.Addr(), srv.URL, repo, appExtra, srv.URL)
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, rdb: r.Client(t), sim: s, cfg: cfg, path: path, labels: lifecycle.Labels{Prefix: cfg.LabelPrefix}}
}

// ctl runs one command line in-process and returns its exit code and output.
func (w *world) ctl(argv ...string) (int, string, string) {
	w.t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"-c", w.path}, argv...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func (w *world) mustCtl(argv ...string) string {
	w.t.Helper()
	code, out, errOut := w.ctl(argv...)
	if code != 0 {
		w.t.Fatalf("agentsmithctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(argv, " "), code, out, errOut)
	}
	return out
}

// runTicket takes issue n from trigger to Done through the real claim
// service and executor, with an audit writer recording every event, as one
// replica would.
func (w *world) runTicket(n int) {
	w.t.Helper()
	w.runTicketTo(n, lifecycle.Done, true)
}

// runTicketTo runs the consumer until ticket n reaches want, claiming it
// first when claimFirst is set (else it runs what is queued, e.g. a retry).
func (w *world) runTicketTo(n int, want lifecycle.State, claimFirst bool) {
	w.t.Helper()
	ps := lifecycle.Projects{}
	for i := range w.cfg.Projects {
		pc := &w.cfg.Projects[i]
		tr, _, _, err := projects.Tracker(pc, w.rdb, nil, "replica-a", w.cfg.LabelPrefix, nil)
		if err != nil {
			w.t.Fatal(err)
		}
		ps[pc.Name] = projects.Lifecycle(pc, tr)
	}
	aw := audit.NewWriter(w.rdb, audit.WriterConfig{})
	q := queue.New(w.rdb, keys.Queue())
	claims := claim.NewService(w.rdb, q, ps, claim.Config{Instance: "replica-a", Labels: w.labels, Observer: aw})
	exec := consumer.NewExecutor(w.rdb, q, ps, consumer.ExecutorConfig{Instance: "replica-a", Labels: w.labels,
		WorkDir: w.cfg.Consumer.WorkDir, LogsDir: w.cfg.Consumer.Output.LogsDir, HeartbeatTTL: 5 * time.Second, HeartbeatRenew: time.Second, Observer: aw})
	// As in the daemon, the audit writer stops after the executor, so the
	// executor's last event (emitted after the tracker shows Done) is kept.
	ctx, cancel := context.WithCancel(context.Background())
	actx, stopAudit := context.WithCancel(context.Background())
	var wg, awg sync.WaitGroup
	awg.Go(func() { _ = aw.Run(actx) })
	wg.Go(func() { _ = exec.Run(ctx) })
	ref := ps["app"]
	if claimFirst {
		res, err := claims.Claim(ctx, refOf(ref.Name, n), lifecycle.SourcePoll, 0)
		if err != nil || res.Outcome != lifecycle.Claimed {
			w.t.Fatalf("claim: %+v %v", res, err)
		}
	}
	eventually.Wait(w.t, 20*time.Second, "the ticket to be "+want.String(), func() bool {
		is, _ := w.sim.Issue(repo, n)
		return w.labels.StateOf(is.Labels) == want
	})
	cancel()
	wg.Wait()
	stopAudit()
	awg.Wait()
}

func TestStatusTicketsHistoryReport(t *testing.T) {
	w := newWorld(t)
	n := w.sim.CreateIssue(repo, "Fix the login page", "", "agent-smith")
	w.runTicket(n)
	ticket := fmt.Sprintf("github:%s#%d", repo, n)

	out := w.mustCtl("status")
	for _, want := range []string{"QUEUE", "DEPTH", "LEASE", "housekeeping", "poller", "INSTANCE"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	var snap ops.Snapshot
	if err := json.Unmarshal([]byte(w.mustCtl("status", "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Queue.Depth != 0 || len(snap.Runs) != 0 || len(snap.Leases) != 2 {
		t.Errorf("status json = %+v", snap)
	}

	out = w.mustCtl("tickets", "--project", "app", "--state", "done")
	if !strings.Contains(out, ticket) || !strings.Contains(out, "Fix the login page") {
		t.Errorf("tickets --state done lacks the ticket:\n%s", out)
	}
	out = w.mustCtl("tickets", "--project", "app", "--state", "pending")
	if strings.Contains(out, ticket) {
		t.Errorf("tickets --state pending lists a done ticket:\n%s", out)
	}

	out = w.mustCtl("history", ticket)
	for _, want := range []string{"pending → enqueued", "enqueued → in-progress", "in-progress → done", "replica-a"} {
		if !strings.Contains(out, want) {
			t.Errorf("history lacks %q:\n%s", want, out)
		}
	}
	var entries []audit.Entry
	if err := json.Unmarshal([]byte(w.mustCtl("history", ticket, "-o", "json")), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || entries[0].Event.To != lifecycle.Enqueued || entries[2].Event.To != lifecycle.Done {
		t.Errorf("history json = %+v", entries)
	}

	var rep Report
	if err := json.Unmarshal([]byte(w.mustCtl("report", "--project", "app", "--since", "1h", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tickets != 1 || rep.LeadTime.Count != 1 || rep.RunTime.Count != 1 || rep.QueueWait.Count != 1 ||
		rep.Outcomes["claimed"] != 1 || rep.Retriggered != 0 {
		t.Errorf("report = %+v", rep)
	}
	out = w.mustCtl("report", "--since", "1d")
	for _, want := range []string{"lead time", "queue wait", "run time", "re-triggered", "claimed"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	out = w.mustCtl("events", "-n", "2")
	if !strings.Contains(out, "in-progress → done") || strings.Contains(out, "pending → enqueued") {
		t.Errorf("events -n 2:\n%s", out)
	}
}

func TestExitCodes(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		argv []string
		code int
	}{
		{[]string{"status"}, 0},
		{[]string{"completion", "bash"}, 0},
		{[]string{"bogus"}, 2},
		{[]string{"status", "--nope"}, 2},
		{[]string{"status", "-o", "yaml"}, 2},
		{[]string{"history"}, 2},
		{[]string{"history", "acme/app#1"}, 2},
		{[]string{"history", "github:acme/app#404"}, 3},
		{[]string{"history", "github:other/repo#1"}, 3},
		{[]string{"history", "jira:OPS-1", "--project", "app"}, 2},
		{[]string{"tickets"}, 2}, // two projects: --project needed
		{[]string{"tickets", "--project", "nope"}, 3},
		{[]string{"tickets", "--project", "app", "--state", "sideways"}, 2},
		{[]string{"report", "--since", "yesterday"}, 2},
		{[]string{"release", "github:acme/app#1", "--yes"}, 3},
		{[]string{"requeue", "github:acme/app#404"}, 3},
	} {
		code, out, errOut := w.ctl(c.argv...)
		if code != c.code {
			t.Errorf("agentsmithctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(c.argv, " "), code, c.code, out, errOut)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-c", filepath.Join(t.TempDir(), "missing.yaml"), "status"}, &out, &errOut); code != 1 {
		t.Errorf("missing config: exit %d, want 1 (%s)", code, errOut.String())
	}
	// Redis unreachable: an error, not a hang.
	data, err := os.ReadFile(w.path)
	if err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(t.TempDir(), "dead.yaml")
	yml := strings.Replace(string(data), w.cfg.Redis.Addr, "127.0.0.1:1", 1)
	if err := os.WriteFile(dead, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"-c", dead, "history", "github:acme/app#1"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "connect") {
		t.Errorf("Redis unreachable: exit %d, want 1 (%s)", code, errOut.String())
	}
}

func TestRequeueReleaseCancel(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	// Enqueued on the tracker, no request anywhere: what a lost push leaves.
	n := w.sim.CreateIssue(repo, "Lost its request", "", "agent-smith", lifecycletest.Label(lifecycle.Enqueued))
	ticket := fmt.Sprintf("github:%s#%d", repo, n)
	out := w.mustCtl("requeue", ticket)
	if !strings.Contains(out, "requeued "+ticket) {
		t.Fatalf("requeue:\n%s", out)
	}
	if l, _ := w.rdb.LLen(ctx, keys.Queue()).Result(); l != 1 {
		t.Fatalf("queue length %d after requeue, want 1", l)
	}
	out = w.mustCtl("requeue", ticket)
	if !strings.Contains(out, "not requeued") || !strings.Contains(out, "already queued") {
		t.Errorf("second requeue:\n%s", out)
	}
	if l, _ := w.rdb.LLen(ctx, keys.Queue()).Result(); l != 1 {
		t.Errorf("queue length %d after a second requeue, want 1", l)
	}
	var snap ops.Snapshot
	if err := json.Unmarshal([]byte(w.mustCtl("status", "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Queue.Depth != 1 || snap.Queue.Oldest != ticket {
		t.Errorf("status queue = %+v", snap.Queue)
	}
	// The requeue is in the audit trail, by the CLI.
	out = w.mustCtl("history", ticket)
	if !strings.Contains(out, "enqueued → enqueued") || !strings.Contains(out, "agentsmithctl@") {
		t.Errorf("history after requeue:\n%s", out)
	}
	// A Pending ticket is not requeued.
	p := w.sim.CreateIssue(repo, "Pending", "", "agent-smith")
	out = w.mustCtl("requeue", fmt.Sprintf("github:%s#%d", repo, p))
	if !strings.Contains(out, "state is pending") {
		t.Errorf("requeue of a pending ticket:\n%s", out)
	}

	// release: a stuck claim lock and heartbeat.
	lock, hb := keys.ClaimLock("github", fmt.Sprintf("%s#%d", repo, n)), keys.Heartbeat(fmt.Sprintf("github:%s#%d", repo, n))
	w.rdb.Set(ctx, lock, "dead-replica|webhook|0|tok", time.Minute)
	w.rdb.Set(ctx, hb, "run-token", time.Minute)
	code, _, errOut := w.ctl("release", ticket)
	if code != exitUsage || !strings.Contains(errOut, "--yes") || !strings.Contains(errOut, "dead-replica") {
		t.Errorf("release without --yes: exit %d, stderr %s", code, errOut)
	}
	if n, _ := w.rdb.Exists(ctx, lock, hb).Result(); n != 2 {
		t.Fatalf("release without --yes deleted keys")
	}
	out = w.mustCtl("release", ticket, "--yes")
	if !strings.Contains(out, "dead-replica") || !strings.Contains(out, "run-token") {
		t.Errorf("release --yes:\n%s", out)
	}
	if n, _ := w.rdb.Exists(ctx, lock, hb).Result(); n != 0 {
		t.Errorf("release --yes left %d keys", n)
	}

	// cancel: the key the executor watches, with a TTL.
	w.mustCtl("cancel", ticket, "--reason", "wrong repo", "--ttl", "10m")
	v, err := w.rdb.Get(ctx, keys.Cancel(fmt.Sprintf("github:%s#%d", repo, n))).Result()
	if err != nil || v != "cancelled by agentsmithctl: wrong repo" {
		t.Errorf("cancel key = %q, %v", v, err)
	}
	if ttl, _ := w.rdb.PTTL(ctx, keys.Cancel(fmt.Sprintf("github:%s#%d", repo, n))).Result(); ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("cancel key TTL = %s, want ~10m", ttl)
	}
	// Jira tickets are inferred from their key.
	w.mustCtl("cancel", "jira:OPS-7")
	if v, _ := w.rdb.Get(ctx, keys.Cancel("jira:OPS-7")).Result(); v != "cancelled by agentsmithctl: operator request" {
		t.Errorf("jira cancel key = %q", v)
	}
}

// syncBuffer is written by the follower goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestEventsFollow(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-c", w.path, "events", "--follow", "-o", "json"}, &out, &errOut) }()
	eventually.Wait(t, 10*time.Second, "the follower to block on XREAD", func() bool {
		clients, _ := w.rdb.ClientList(context.Background()).Result()
		return strings.Contains(clients, "cmd=xread")
	})
	n := w.sim.CreateIssue(repo, "Followed", "", "agent-smith")
	w.runTicket(n)
	// The claim's event and the executor's are written by different
	// goroutines, so the stream need not hold them in lifecycle order:
	// every one is followed, Done among them.
	followed := func() (lines []string, done bool) {
		lines = strings.Split(strings.TrimSpace(out.String()), "\n")
		for _, l := range lines {
			var e audit.Entry
			if json.Unmarshal([]byte(l), &e) == nil && e.Event.To == lifecycle.Done {
				done = true
			}
		}
		return lines, done
	}
	eventually.Wait(t, 10*time.Second, "the followed events", func() bool {
		lines, done := followed()
		return len(lines) >= 3 && done
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("events --follow exit %d: %s", code, errOut.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Event.Ref.ID != fmt.Sprintf("%s#%d", repo, n) {
			t.Errorf("followed line %s (%v): want an event of the ticket", l, err)
		}
	}
}

func TestReportPercentiles(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var entries []audit.Entry
	add := func(ticket int, from, to lifecycle.State, outcome string, off, wait, runT time.Duration) {
		entries = append(entries, audit.Entry{Event: lifecycle.Event{Kind: lifecycle.EventTransition, At: at.Add(off),
			Ref: refOf("app", ticket), From: from, To: to, Outcome: outcome, Wait: wait, Run: runT}})
	}
	for i := 1; i <= 10; i++ {
		add(i, lifecycle.Pending, lifecycle.Enqueued, "claimed", 0, 0, 0)
		add(i, lifecycle.Enqueued, lifecycle.InProgress, "started", time.Second, time.Duration(i)*time.Second, 0)
		add(i, lifecycle.InProgress, lifecycle.Done, "succeeded", time.Duration(i)*time.Minute, 0, time.Duration(i)*time.Minute)
	}
	add(3, lifecycle.Pending, lifecycle.Enqueued, "claimed", time.Hour, 0, 0) // re-triggered
	r := buildReport("app", at, at.Add(2*time.Hour), entries)
	if r.LeadTime.Count != 10 || r.LeadTime.P50MS != (5*time.Minute).Milliseconds() || r.LeadTime.P90MS != (9*time.Minute).Milliseconds() {
		t.Errorf("lead time = %+v", r.LeadTime)
	}
	if r.QueueWait.P50MS != 5000 || r.QueueWait.P90MS != 9000 {
		t.Errorf("queue wait = %+v", r.QueueWait)
	}
	if r.Retriggered != 1 || r.RetriggerRate != 0.1 || r.Outcomes["claimed"] != 11 || r.Outcomes["succeeded"] != 10 {
		t.Errorf("report = %+v", r)
	}
	if other := buildReport("other", at, at, entries); other.Events != 0 {
		t.Errorf("another project's report counted %d events", other.Events)
	}
}

func refOf(project string, n int) platforms.Ref {
	return platforms.Ref{Platform: "github", Project: project, ID: fmt.Sprintf("%s#%d", repo, n)}
}

// A ticket title with terminal escape sequences (OSC 52 writes the
// operator's clipboard, CSI clears the screen) is printed inert.
func TestTicketsStripsTerminalEscapes(t *testing.T) {
	w := newWorld(t)
	title := "pwn \x1b]52;c;ZWNobyBvd25lZA==\x07 \x1b[2J\u009b31m\x00done"
	w.sim.CreateIssue(repo, title, "", "agent-smith")
	for _, args := range [][]string{{"tickets", "--project", "app", "--state", "pending"}, {"tickets", "--project", "app", "--state", "pending", "-o", "json"}} {
		code, out, errOut := w.ctl(args...)
		for _, r := range out + errOut {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("%v: control character %U printed:\n%q", args, r, out+errOut)
			}
		}
		if code != 0 || !strings.Contains(out, "]52;c;ZWNobyBvd25lZA==") {
			t.Errorf("%v: exit %d, title lost:\n%s", args, code, out)
		}
	}
}

func TestRetry(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	n := w.sim.CreateIssue(repo, "Failed", "", "agent-smith", lifecycletest.Label(lifecycle.Failed))
	ticket := fmt.Sprintf("github:%s#%d", repo, n)
	out := w.mustCtl("retry", ticket)
	if !strings.Contains(out, "retried "+ticket) || !strings.Contains(out, "attempt 1") {
		t.Fatalf("retry:\n%s", out)
	}
	if l, _ := w.rdb.LLen(ctx, keys.Queue()).Result(); l != 1 {
		t.Fatalf("queue length %d after retry, want 1", l)
	}
	if is, _ := w.sim.Issue(repo, n); !slices.Contains(is.Labels, lifecycletest.Label(lifecycle.Enqueued)) || slices.Contains(is.Labels, lifecycletest.Label(lifecycle.Failed)) {
		t.Errorf("labels after retry %q, want enqueued instead of failed", is.Labels)
	}
	out = w.mustCtl("retry", ticket)
	if !strings.Contains(out, "not retried") || !strings.Contains(out, "state is enqueued") {
		t.Errorf("second retry:\n%s", out)
	}
	if l, _ := w.rdb.LLen(ctx, keys.Queue()).Result(); l != 1 {
		t.Errorf("queue length %d after a second retry, want 1", l)
	}
	out = w.mustCtl("history", ticket)
	if !strings.Contains(out, "failed → enqueued") {
		t.Errorf("history after retry:\n%s", out)
	}
}

// An operator's command spends the token's budget every replica shares:
// after a replica was answered 429 with an hour's Retry-After, `retry`
// sends nothing to the tracker and says why, instead of spending (or
// learning alone) a limit a replica already hit.
func TestCommandsShareTheTokensBudget(t *testing.T) {
	w := newWorld(t)
	n := w.sim.CreateIssue(repo, "Failed", "", "agent-smith", lifecycletest.Label(lifecycle.Failed))
	pc, _ := w.cfg.Project("app")
	// A replica's client, as the daemon builds it: the shared budget.
	hc := trackerhttp.NewClientWith(trackerhttp.Options{RateLimits: projects.RateLimits(pc.Platform), Budget: budget.New(w.rdb, nil)})
	tr, _, _, err := projects.Tracker(pc, w.rdb, hc, "replica-a", w.cfg.LabelPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.sim.SetFaults(trackersim.Faults{RateLimitNext: 1, RetryAfter: 3600})
	if _, err := tr.Get(t.Context(), refOf("app", n)); !errors.Is(err, trackerhttp.ErrRateLimited) {
		t.Fatalf("the replica's read: %v, want ErrRateLimited", err)
	}
	before := w.sim.Stats().Requests()
	code, out, errOut := w.ctl("retry", fmt.Sprintf("github:%s#%d", repo, n))
	if sent := w.sim.Stats().Requests() - before; sent != 0 || code == 0 {
		t.Errorf("retry during the replica's hold: exit %d, %d tracker requests; want an error and 0\nstdout: %s\nstderr: %s", code, sent, out, errOut)
	}
	if !strings.Contains(errOut, "rate") {
		t.Errorf("retry's error does not say the token is rate limited: %s", errOut)
	}
}
