// Package statuspage serves the daemon's status page: /status is HTML
// rendered on the server (html/template, readable without JavaScript; a
// small script refreshes it in place every two seconds) with forms to
// requeue, retry and cancel a ticket and to pause and resume a project's
// queue; /status.json is the same data for tools: the fleet snapshot
// (lifecycle/ops, the same one agentsmithctl status prints) plus the newest
// audit events, each linked to its ticket's page on the tracker. Every
// request is authenticated, loopback included (a pipeline runs on the same
// host): reads accept the status token as a bearer token or a login
// session; actions need the session, its CSRF token and a request that
// says it comes from this page (session.go, actions.go). AllowHosts
// (host.go) refuses a Host header that is not this listener's before any of
// that, against DNS rebinding.
package statuspage

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultRecent is how many audit events the page shows.
const DefaultRecent = 50

// Config configures the page.
type Config struct {
	RDB redis.UniversalClient
	// Queue is the queue with the fleet's layout (projects.Queue): the page
	// counts its every level and delayed set.
	Queue    *queue.Queue
	Projects lifecycle.ProjectSource // to link tickets to their tracker pages
	// Instance is the replica serving the page.
	Instance     string
	HeartbeatTTL time.Duration
	// RestartGrace is the StaleJobDetector's (lifecycle.RestartGrace): the
	// ticket page says when a run lost to a Redis restart runs again.
	RestartGrace time.Duration
	// Token is required as "Authorization: Bearer <token>" (RFC 6750
	// §2.1), or a browser logs in with it once (POST /status/login) and
	// gets a session cookie. Never in a URL: query strings reach proxy logs
	// and browser history. Empty, nobody is let in: the daemon always has
	// one (status.token, or the file internal/statustoken creates).
	Token string
	// SessionTTL is how long a login lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// Claims serves the requeue and retry buttons (with Queue); with Claims
	// nil the page offers no ticket actions but cancel.
	Claims *claim.Service
	// Gate serves the approve, reject and cancel buttons of tickets
	// awaiting approval; with Gate nil the page offers none of them.
	Gate Decider
	// LogRoots are the logs dirs (consumer.output.logs_dir): /status/logs
	// serves attempt logs from under them only, never through a link.
	LogRoots []string
	Recent   int
	Clock    func() time.Time
	Logger   *zap.Logger
}

// Decider carries out an operator's decision or cancel on a parked
// ticket (*gate.Gate).
type Decider interface {
	DecideAsOperator(ctx context.Context, ref platforms.Ref, actor string, d gate.Decision) (claim.CommandResult, error)
	CancelAsOperator(ctx context.Context, ref platforms.Ref, actor, reason string) (claim.CommandResult, error)
}

// Event is one audit entry as the page shows it.
type Event struct {
	ID string `json:"id"`
	lifecycle.Event
	Ticket string `json:"ticket"`
}

// eventExtra is what Event adds to lifecycle.Event's JSON.
type eventExtra struct {
	ID     string `json:"id"`
	Ticket string `json:"ticket"`
}

// MarshalJSON writes lifecycle.Event's fields (its durations as _ms) plus
// id and ticket. Without it the embedded Event's MarshalJSON would be
// promoted and drop them.
func (e Event) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(e.Event)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(inner, &fields); err != nil {
		return nil, err
	}
	extra, err := json.Marshal(eventExtra{ID: e.ID, Ticket: e.Ticket})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(extra, &fields); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Event) UnmarshalJSON(b []byte) error {
	var x eventExtra
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &e.Event); err != nil {
		return err
	}
	e.ID, e.Ticket = x.ID, x.Ticket
	return nil
}

// Status is the /status.json document.
type Status struct {
	ops.Snapshot
	ServedBy string  `json:"served_by"`
	Recent   []Event `json:"recent"`
	// AuditLen is the audit stream's length.
	AuditLen int64 `json:"audit_len"`
	// Links maps each ticket shown to its page on the tracker.
	Links map[string]string `json:"links"`
}

type handler struct {
	cfg    Config
	reader *audit.Reader
	sess   *sessions
	charts chartCache
}

// New returns the handler of GET /status, GET /status.json, GET
// /status/logs, GET /status/ticket (ticket.go), POST /status/login, POST
// /status/logout and POST /status/action.
func New(cfg Config) http.Handler {
	if cfg.Recent <= 0 {
		cfg.Recent = DefaultRecent
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Projects == nil {
		cfg.Projects = lifecycle.Projects{}
	}
	h := &handler{cfg: cfg, reader: audit.NewReader(cfg.RDB), sess: newSessions(cfg.Token, cfg.SessionTTL, cfg.Clock)}
	// Actions are POSTs from this page only: Sec-Fetch-Site / Origin must
	// say same origin (403 otherwise), and the form must carry the
	// session's CSRF token (actions.go).
	cop := http.NewCrossOriginProtection()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", h.authorized(h.servePage))
	mux.HandleFunc("GET /status.json", h.authorized(h.serveJSON))
	mux.HandleFunc("GET /status/logs", h.authorized(h.serveLog))
	mux.HandleFunc("GET /status/ticket", h.authorized(h.serveTicket))
	mux.Handle("POST /status/login", cop.Handler(http.HandlerFunc(h.login)))
	mux.Handle("POST /status/logout", cop.Handler(http.HandlerFunc(h.logout)))
	mux.Handle("POST /status/action", cop.Handler(http.HandlerFunc(h.action)))
	return mux
}

// authorized lets a request through with the bearer token or a valid
// session cookie. A browser with neither gets the login form on /status.
func (h *handler) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if !h.sess.bearer(r) && h.sess.session(r) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentsmithd status"`)
			if r.URL.Path == "/status" {
				h.renderLogin(w, r, http.StatusUnauthorized, "")
				return
			}
			http.Error(w, "401 unauthorized: send Authorization: Bearer <status token>, or log in at /status", http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

// securityHeaders: nothing the page serves may be cached, sniffed or framed
// (a framed page would let another site trick a click on its buttons).
func securityHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// RequireToken guards next with the status token: a request needs
// "Authorization: Bearer <token>"; with token empty none gets through. The
// daemon guards /metrics and everything else on the admin listener that is
// not the status page with it, since Prometheus scrapes with a bearer token.
func RequireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentsmithd status"`)
			http.Error(w, "401 unauthorized: send Authorization: Bearer <status token>", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

func (h *handler) serveJSON(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	st, err := h.Read(ctx)
	if err != nil {
		h.cfg.Logger.Warn("status page: read", zap.Error(err))
		http.Error(w, "redis unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// Read builds the status document.
func (h *handler) Read(ctx context.Context) (Status, error) {
	snap, err := ops.Read(ctx, h.cfg.RDB, h.cfg.Queue, ops.ReadConfig{HeartbeatTTL: h.cfg.HeartbeatTTL, Clock: h.cfg.Clock})
	if err != nil {
		return Status{}, err
	}
	st := Status{Snapshot: snap, ServedBy: h.cfg.Instance, Recent: []Event{}, Links: map[string]string{}}
	link := func(ref platforms.Ref) {
		if u := WebURL(h.cfg.Projects, ref); u != "" {
			st.Links[ref.String()] = u
		}
	}
	for _, r := range snap.Runs {
		link(r.Ref)
	}
	for _, o := range snap.Outcomes {
		link(o.Ref)
	}
	for _, r := range snap.Refusals {
		link(r.Ref)
	}
	for _, a := range snap.Awaiting {
		link(a.Ref)
	}
	entries, err := h.reader.Recent(ctx, h.cfg.Recent)
	if err != nil {
		return st, err
	}
	if st.AuditLen, err = h.reader.Len(ctx); err != nil {
		return st, err
	}
	for _, e := range entries {
		ev := Event{ID: e.ID, Event: e.Event}
		if e.Event.Ref.ID != "" {
			ev.Ticket = e.Event.Ref.String()
			link(e.Event.Ref)
		}
		st.Recent = append(st.Recent, ev)
	}
	return st, nil
}

// WebURL is the ticket's page on its tracker, "" when its project is not
// configured here or its tracker cannot tell.
func WebURL(projects lifecycle.ProjectSource, ref platforms.Ref) string {
	p, ok := projects.Lookup(ref)
	if !ok {
		return ""
	}
	wl, ok := p.Tracker.(platforms.WebLinker)
	if !ok {
		return ""
	}
	u, err := wl.WebURL(ref)
	if err != nil || !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) {
		return ""
	}
	return u
}
