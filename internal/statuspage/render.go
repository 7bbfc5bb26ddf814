package statuspage

import (
	"context"
	"crypto/rand"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/platforms"
)

//go:embed status.html
var pageSource string

// pages are the status page and the login form. html/template escapes
// every value for where it lands (text, attribute, URL), so tracker text
// (ticket ids, reasons, instance names) is never parsed as HTML.
var pages = template.Must(template.New("status.html").Funcs(template.FuncMap{
	"dur":   humanMS,
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
	"since": func(now, t time.Time) string { return humanMS(now.Sub(t).Milliseconds()) },
	"dict": func(csrf, action, ticket, project string) actView {
		return actView{CSRF: csrf, Action: action, Ticket: ticket, Project: project}
	},
	"row": func(ref platforms.Ref, links map[string]string) ticketRow {
		return ticketRow{Ref: ref, Link: links[ref.String()]}
	},
}).Parse(pageSource))

// maxTickets bounds the ticket table.
const maxTickets = 200

// pageView is what the template renders.
type pageView struct {
	Status
	Flash    string
	Error    string
	CSRF     string
	Nonce    string
	Tickets  []ticketRow
	Awaiting []awaitingRow
	Projects []projectRow
	TokenSet bool
	// Charts: throughput and lead time over the last hours (charts.go).
	Charts charts
}

// ShowPools: the page lists the pools where there is more than the
// default pool, or a pool (the default one) whose requests nobody takes.
func (v pageView) ShowPools() bool {
	return len(v.Pools) > 1 || slices.ContainsFunc(v.Pools, ops.Pool.Unserved)
}

// ticketRow is a ticket the page offers actions for.
type ticketRow struct {
	Ref   platforms.Ref
	Link  string
	State string
	Where string
	// live: a run, a queued or delayed request of the ticket exists.
	live bool
	// Actions are the buttons that apply to the ticket (ticketActions).
	Actions []string
}

// ticketActions are the actions that can change a ticket in state (its
// last transition's; "" when none is known) with a request or run of it
// live or not: requeue an Enqueued ticket that has no request, retry a
// Failed one, cancel a request or run; approve, reject or cancel a parked
// one (canDecide: the page has the ApprovalGate). A Done or Pending
// ticket with neither gets none, as each action would only say why it did
// nothing.
func ticketActions(state string, live, canRequeue, canRetry, canDecide bool) []string {
	var out []string
	if state == lifecycle.AwaitingApproval.String() {
		// Parked: no request or run; the gate decides.
		if canDecide {
			out = append(out, "approve", "reject", "cancel")
		}
		return out
	}
	if canRequeue && state == lifecycle.Enqueued.String() && !live {
		out = append(out, "requeue")
	}
	if canRetry && state == lifecycle.Failed.String() {
		out = append(out, "retry")
	}
	if live || state == lifecycle.Enqueued.String() || state == lifecycle.InProgress.String() {
		out = append(out, "cancel")
	}
	return out
}

// actView is one action button: a form posting to /status/action.
type actView struct{ CSRF, Action, Ticket, Project string }

// projectRow is a configured project with its pause.
type projectRow struct {
	Name   string
	Paused *lifecycle.Pause
}

// servePage renders the page. A browser without a session gets one here
// (with no token configured the page is open, and the session anchors the
// CSRF token of its forms).
func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	session := h.sess.session(r)
	if session == "" {
		session = h.sess.issue(w, r)
	}
	v := pageView{Flash: h.sess.takeFlash(w, r), CSRF: h.sess.csrf(session), Nonce: nonce(),
		TokenSet: h.cfg.Token != ""}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	st, err := h.Read(ctx)
	if err != nil {
		h.cfg.Logger.Warn("status page: read", zap.Error(err))
		v.Error = "Redis unavailable: the data below may be incomplete"
	}
	v.Status = st
	v.Tickets = h.tickets(ctx, st)
	v.Awaiting = h.awaiting(st)
	v.Projects = h.projects(st)
	if v.Charts, err = h.readCharts(ctx); err != nil {
		h.cfg.Logger.Warn("status page: charts", zap.Error(err))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page loads nothing from elsewhere, runs only its own script,
	// posts its forms only here and may not be framed.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+v.Nonce+"'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if err := pages.ExecuteTemplate(w, "page", v); err != nil {
		h.cfg.Logger.Warn("status page: render", zap.Error(err))
	}
}

// renderLogin answers with the login form.
func (h *handler) renderLogin(w http.ResponseWriter, _ *http.Request, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(code)
	if err := pages.ExecuteTemplate(w, "login", struct{ Error string }{msg}); err != nil {
		h.cfg.Logger.Warn("status page: render login", zap.Error(err))
	}
}

func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b64(b)
}

// tickets lists what the page offers actions for: runs in flight, requests
// waiting (queued, delayed, put aside for a pause) and the tickets of the
// recent events, each once, in that order.
func (h *handler) tickets(ctx context.Context, st Status) []ticketRow {
	var out []ticketRow
	seen := map[string]int{}
	add := func(ref platforms.Ref, state, where string, live bool) {
		if ref.ID == "" || ref.Project == "" || len(out) >= maxTickets {
			return
		}
		if i, ok := seen[ref.String()]; ok {
			if out[i].State == "" {
				out[i].State = state
			}
			return
		}
		seen[ref.String()] = len(out)
		out = append(out, ticketRow{Ref: ref, Link: st.Links[ref.String()], State: state, Where: where, live: live})
	}
	// requeue and retry need the page's claim service (and queue); a
	// parked ticket's approve, reject and cancel are in the awaiting
	// table, here only for one the parked index lacks (the GateKeeper
	// mends it).
	parked := map[string]bool{}
	for _, e := range st.Awaiting {
		parked[e.Ref.String()] = true
	}
	defer func() {
		for i := range out {
			out[i].Actions = ticketActions(out[i].State, out[i].live, h.cfg.Claims != nil && h.cfg.Queue != nil, h.cfg.Claims != nil,
				h.cfg.Gate != nil && !parked[out[i].Ref.String()])
		}
	}()
	for _, o := range st.Outcomes {
		add(o.Ref, "", "pipeline ended; "+o.To+" waiting for the tracker since "+o.Recorded.UTC().Format("15:04:05"), false)
	}
	for _, r := range st.Runs {
		add(r.Ref, "", "running on "+r.Instance, true)
	}
	if q := h.cfg.Queue; q != nil {
		if entries, err := q.Entries(ctx); err == nil {
			for _, e := range entries {
				if req, err := lifecycle.DecodeRequest(e); err == nil {
					add(req.Ref, "", "queued", true)
				}
			}
		}
		if delayed, err := q.DelayedEntries(ctx); err == nil {
			for _, d := range delayed {
				if req, err := lifecycle.DecodeRequest(d.Payload); err == nil {
					where := "delayed until " + d.Due.UTC().Format("15:04:05")
					if req.PausedAside {
						where = "waiting: project paused"
					}
					add(req.Ref, "", where, true)
				}
			}
		}
	}
	for _, e := range st.Recent {
		state := ""
		if e.Kind == lifecycle.EventTransition {
			state = e.To.String()
		}
		add(e.Event.Ref, state, "", false)
	}
	return out
}

// projects lists the configured projects, by name, with their pauses.
func (h *handler) projects(st Status) []projectRow {
	paused := map[string]*lifecycle.Pause{}
	for i := range st.Paused {
		paused[st.Paused[i].Project] = &st.Paused[i]
	}
	var out []projectRow
	for name := range h.cfg.Projects.Watched() {
		out = append(out, projectRow{Name: name, Paused: paused[name]})
	}
	slices.SortFunc(out, func(a, b projectRow) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// humanMS writes a duration in milliseconds for people ("gone" when
// negative: a heartbeat that expired).
func humanMS(ms int64) string {
	if ms < 0 {
		return "gone"
	}
	s := float64(ms) / 1000
	switch {
	case s < 60:
		return fmt.Sprintf("%.1f s", s)
	case s < 3600:
		return fmt.Sprintf("%d m %d s", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%d h %d m", int(s)/3600, int(s)%3600/60)
}
