package trackersim

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"sync"

	"go.uber.org/zap"
)

// Hook is a webhook subscription: every issue event of Repo ("" = every
// repository) is POSTed to URL, signed with Secret when it is set. Dialect
// picks the payload format and headers: "" or "github" for GitHub's, else a
// registered dialect's name ("gitlab", …); see dialect.go.
type Hook struct {
	Repo    string `json:"repo"`
	URL     string `json:"url"`
	Secret  string `json:"secret"`
	Dialect string `json:"dialect,omitempty"`
	// Events is what the hook's list endpoint reports it subscribed to, in
	// the dialect's own names (GitHub "issues", "issue_comment"; GitLab
	// "issues_events", "note_events"; Azure DevOps "workitem.updated",
	// "workitem.commented"; Jira "jira:issue_updated", "comment_created");
	// nil reports the events docs/configuration.md ("Platform setup") asks
	// for, the comment events among them. Deliveries are not filtered by it.
	Events []string `json:"events,omitempty"`
	// AutoDisable picks a GitLab hook's disabling rule: HookDisableCurrent
	// (the default), HookDisableLegacy or HookDisableOff; see hookstate.go.
	AutoDisable string `json:"auto_disable,omitempty"`
	// System makes a GitLab hook a self-managed instance's system hook: it
	// gets the project events (project_create, project_update on archiving
	// and unarchiving) of every project, and no issue events, which system
	// hooks do not send (https://docs.gitlab.com/administration/system_hooks/).
	System bool `json:"system,omitempty"`
	// JQL is a Jira admin webhook's JQL filter: its issue events are sent
	// only for issues the query selects after the change ("" sends every
	// project's).
	JQL string `json:"jql,omitempty"`
}

// outgoing is one delivery, ready to send except for the per-hook headers.
type outgoing struct {
	event string // X-GitHub-Event, or the dialect's event name
	guid  string // X-GitHub-Delivery, or the dialect's de-dup id
	body  []byte
	extra int // duplicate sends
	// header, when set, is every delivery header (non-GitHub dialects);
	// nil means GitHub's headers built by githubDeliveryHeaders.
	header http.Header
}

// hookQueue is one hook's ordered delivery queue with its own worker, so a
// slow receiver delays only its own deliveries and never reorders them.
type hookQueue struct {
	id   int64
	hook Hook
	mu   sync.Mutex
	q    []outgoing
	wake chan struct{}
	// health is the hook's delivery record (GitLab disables failing hooks).
	health hookHealth
}

// hookSet owns every hook and its worker goroutine.
type hookSet struct {
	sim    *Sim
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	list    []*hookQueue
	nextID  int64
	pending int
	idle    chan struct{} // closed when pending drops to zero
	closed  bool
}

func (hs *hookSet) init(s *Sim) {
	hs.sim = s
	hs.client = &http.Client{Timeout: hookTimeout}
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	hs.idle = make(chan struct{})
	close(hs.idle)
}

// AddHook subscribes a URL to issue events and sends it a ping event, as
// GitHub does when a webhook is created
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#ping).
func (s *Sim) AddHook(h Hook) { s.addHook(h) }

func (s *Sim) addHook(h Hook) int64 {
	if h.Repo != "" {
		s.store.createRepo(h.Repo)
	}
	hs := &s.hooks
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return 0
	}
	hs.nextID++
	q := &hookQueue{id: hs.nextID, hook: h, wake: make(chan struct{}, 1)}
	hs.list = append(hs.list, q)
	hs.wg.Add(1)
	hs.mu.Unlock()
	go hs.work(q)
	s.log.Info("webhook added", zap.Int64("hook_id", q.id), zap.String("repo", h.Repo), zap.String("url", h.URL))
	ping, ok := s.githubPing(q), true
	if !isGitHubHook(h) {
		ok = false
		if d, found := dialectFor(h.Dialect); found && d.ping != nil {
			ping, ok = d.ping(s, q.id, h)
		}
	}
	if ok {
		drop, extra := s.faults.delivery()
		hs.enqueue(q, ping, drop, extra)
	}
	return q.id
}

// matching returns the hooks subscribed to repo.
func (hs *hookSet) matching(repo string) []*hookQueue {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []*hookQueue
	for _, q := range hs.list {
		if !q.hook.System && (q.hook.Repo == "" || q.hook.Repo == repo) {
			out = append(out, q)
		}
	}
	return out
}

// system returns the system hooks.
func (hs *hookSet) system() []*hookQueue {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []*hookQueue
	for _, q := range hs.list {
		if q.hook.System {
			out = append(out, q)
		}
	}
	return out
}

func (hs *hookSet) enqueue(q *hookQueue, d outgoing, drop bool, extra int) {
	if drop {
		hs.sim.count(func(st *Stats) { st.Dropped++ })
		hs.sim.log.Debug("webhook delivery dropped by fault", zap.Int64("hook_id", q.id), zap.String("delivery", d.guid))
		return
	}
	d.extra = extra
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return
	}
	if hs.pending == 0 {
		hs.idle = make(chan struct{})
	}
	hs.pending++
	hs.mu.Unlock()
	q.mu.Lock()
	q.q = append(q.q, d)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (hs *hookSet) done() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.pending > 0 {
		hs.pending--
		if hs.pending == 0 {
			close(hs.idle)
		}
	}
}

func (hs *hookSet) work(q *hookQueue) {
	defer hs.wg.Done()
	for {
		select {
		case <-hs.ctx.Done():
			return
		case <-q.wake:
		}
		for {
			q.mu.Lock()
			if len(q.q) == 0 {
				q.mu.Unlock()
				break
			}
			d := q.q[0]
			q.q = q.q[1:]
			q.mu.Unlock()
			for i := 0; i <= d.extra && hs.ctx.Err() == nil; i++ {
				hs.send(q, d)
			}
			hs.done()
		}
	}
}

func (hs *hookSet) send(q *hookQueue, d outgoing) {
	s := hs.sim
	if !q.health.admit(s.clock()) {
		return
	}
	req, err := http.NewRequestWithContext(hs.ctx, http.MethodPost, q.hook.URL, bytes.NewReader(d.body))
	if err != nil {
		s.count(func(st *Stats) { st.Deliveries++; st.DeliveryFailures++ })
		s.log.Warn("webhook request", zap.Int64("hook_id", q.id), zap.Error(err))
		return
	}
	if d.header != nil {
		for k, v := range d.header {
			req.Header[k] = append([]string(nil), v...)
		}
	} else {
		githubDeliveryHeaders(req.Header, q, d)
	}
	resp, err := hs.client.Do(req)
	ok := err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
	}
	s.count(func(st *Stats) {
		st.Deliveries++
		if !ok {
			st.DeliveryFailures++
		}
	})
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	q.health.record(s.clock(), q.hook, status, ok)
	if !ok {
		s.log.Warn("webhook delivery failed", zap.Int64("hook_id", q.id), zap.String("event", d.event),
			zap.String("delivery", d.guid), zap.Int("status", status), zap.Error(err))
	}
}

func (hs *hookSet) waitIdle(ctx context.Context) error {
	hs.mu.Lock()
	ch := hs.idle
	hs.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for webhook deliveries: %w", ctx.Err())
	}
}

func (hs *hookSet) close() {
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return
	}
	hs.closed = true
	hs.mu.Unlock()
	hs.cancel()
	hs.wg.Wait()
	hs.mu.Lock()
	if hs.pending > 0 {
		hs.pending = 0
		close(hs.idle)
	}
	hs.mu.Unlock()
}

// newGUID returns a random RFC 4122 version-4 UUID, the X-GitHub-Delivery
// format.
func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
