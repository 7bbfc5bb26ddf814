// Package statuspage serves the daemon's read-only status page: /status is
// one embedded HTML page whose script polls /status.json every two seconds;
// /status.json is the fleet snapshot (lifecycle/ops, the same one
// agentsmithctl status prints) plus the newest audit events, each linked to
// its ticket's page on the tracker. Nothing on the page can change state.
package statuspage

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

//go:embed status.html
var page []byte

// DefaultRecent is how many audit events the page shows.
const DefaultRecent = 50

// Config configures the page.
type Config struct {
	RDB redis.UniversalClient
	// Queue is the queue with the fleet's layout (projects.Queue): the page
	// counts its every level and delayed set.
	Queue    *queue.Queue
	Projects lifecycle.Projects // to link tickets to their tracker pages
	// Instance is the replica serving the page.
	Instance     string
	HeartbeatTTL time.Duration
	// Token, when set, is required as "Authorization: Bearer <token>" or,
	// for a browser's first load, the access_token query parameter
	// (RFC 6750 §2.1 and §2.3).
	Token string
	// LogRoots are the work root and logs dir: /status/logs serves attempt
	// logs from under them only.
	LogRoots []string
	Recent   int
	Clock    func() time.Time
	Logger   *zap.Logger
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
}

// New returns the handler of GET /status and GET /status.json.
func New(cfg Config) http.Handler {
	if cfg.Recent <= 0 {
		cfg.Recent = DefaultRecent
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	h := &handler{cfg: cfg, reader: audit.NewReader(cfg.RDB)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", h.authorized(h.servePage))
	mux.HandleFunc("GET /status.json", h.authorized(h.serveJSON))
	mux.HandleFunc("GET /status/logs", h.authorized(h.serveLog))
	return mux
}

func (h *handler) authorized(next http.HandlerFunc) http.HandlerFunc {
	return RequireToken(h.cfg.Token, next).ServeHTTP
}

// RequireToken guards next with the status token: with token set a
// request needs "Authorization: Bearer <token>" (or ?access_token=, RFC
// 6750 §2.3, for a browser); with it empty next is open. The daemon guards
// /metrics with it too, since Prometheus scrapes with a bearer token.
func RequireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				got = r.URL.Query().Get("access_token")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentsmithd status"`)
				http.Error(w, "401 unauthorized: send Authorization: Bearer <status token>", http.StatusUnauthorized)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

func (h *handler) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page loads nothing from elsewhere and runs only its own script.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	_, _ = w.Write(page)
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
func WebURL(projects lifecycle.Projects, ref platforms.Ref) string {
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
