package statuspage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// maxHistory bounds the events the ticket page shows (its newest).
const maxHistory = 500

// terminalSlot is the strip width of a finished ticket's final state.
const terminalSlot = 24.0

// tailBytes is how much of each attempt's log the ticket page shows.
const tailBytes = 4096

// ticketView is the detail page of one ticket: its transitions over time
// (a table and an SVG strip), every attempt with its output tail and
// result, and its links.
type ticketView struct {
	Ref      platforms.Ref
	Ticket   string // "platform:id", the page's and the logs' parameter
	Title    string
	Link     string
	State    string
	At       time.Time
	Events   []Event
	Strip    strip
	Attempts []attemptView
	// Wait says why an in-progress ticket with no live run waits, and
	// until when (waitReason).
	Wait string
	// Stages and Approvals: a staged ticket's run time per stage and its
	// finished waits at approval gates (stagesOf); Parked, the wait going
	// on, from the parked index.
	Stages    []stageRow
	Approvals []approvalRow
	Parked    *lifecycle.ParkedEntry
	Error     string
}

// attemptView is one attempt: where and when it ran, how it ended (the
// transition out of InProgress that carried its number) and the end of
// its output.
type attemptView struct {
	Run int
	N   int
	// ID is the row's anchor: attempt-N in run 1, run-R-attempt-N later.
	ID         string
	Instance   string
	Started    time.Time
	To         string
	Outcome    string
	Reason     string
	RunMS      int64
	Tail       string
	TailNote   string
	LogURL     string
	Unfinished bool
}

// strip is the SVG timeline of the ticket's states: one segment per state,
// as long as the ticket stayed in it.
type strip struct {
	W, H     float64
	Segments []chartBar
	Start    string
	End      string
}

// serveTicket answers GET /status/ticket?ticket=platform:id.
func (h *handler) serveTicket(w http.ResponseWriter, r *http.Request) {
	platform, id, ok := strings.Cut(r.URL.Query().Get("ticket"), ":")
	if !ok || platform == "" || id == "" || len(id) > 512 {
		http.Error(w, "ticket=platform:id required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	v := h.ticket(ctx, platforms.Ref{Platform: platform, ID: id})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// No script at all on this page; inline SVG needs nothing from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if err := pages.ExecuteTemplate(w, "ticketpage", v); err != nil {
		h.cfg.Logger.Warn("status page: render ticket", zap.Error(err))
	}
}

func (h *handler) ticket(ctx context.Context, ref platforms.Ref) ticketView {
	now := h.cfg.Clock()
	v := ticketView{Ref: ref, Ticket: ref.Platform + ":" + ref.ID, At: now}
	var problems []string
	entries, err := h.reader.History(ctx, ref, time.Time{}, maxHistory)
	if err != nil {
		problems = append(problems, "audit stream unavailable")
	}
	for _, e := range entries {
		if v.Ref.Project == "" {
			v.Ref.Project = e.Event.Ref.Project
		}
		v.Events = append(v.Events, Event{ID: e.ID, Event: e.Event, Ticket: e.Event.Ref.String()})
		if e.Event.Kind == lifecycle.EventTransition {
			v.State = e.Event.To.String()
		}
	}
	if v.Ref.Project != "" {
		v.Link = WebURL(h.cfg.Projects, v.Ref)
		if p, ok := h.cfg.Projects.Lookup(v.Ref); ok {
			// The title is the tracker's, read afresh: anyone who can open
			// an issue wrote it, so it is only ever rendered as text.
			if t, err := p.Tracker.Get(ctx, v.Ref); err == nil {
				v.Title = t.Title
				if h.cfg.Claims != nil {
					// The tracker's state, not the audit stream's: a Redis
					// restart empties the stream while the ticket stays
					// in progress.
					v.State = h.cfg.Claims.Labels().StateOf(t.Labels).String()
				}
			} else {
				problems = append(problems, "tracker unavailable: no title")
			}
		}
	}
	if v.State == lifecycle.InProgress.String() {
		wait, err := h.waitReason(ctx, ref, now)
		if err != nil {
			problems = append(problems, "Redis unavailable: why the ticket waits is unknown")
		}
		v.Wait = wait
	}
	if v.State == lifecycle.AwaitingApproval.String() {
		if e, ok, err := lifecycle.ParkedFor(ctx, h.cfg.RDB, ref); err != nil {
			problems = append(problems, "Redis unavailable: since when the ticket awaits approval is unknown")
		} else if ok {
			v.Parked = &e
		}
	}
	v.Stages, v.Approvals = stagesOf(v.Events)
	v.Strip = timeline(v.Events, now)
	v.Attempts, err = h.attempts(ctx, ref, v.Events)
	if err != nil {
		problems = append(problems, "run logs unavailable")
	}
	v.Error = strings.Join(problems, "; ")
	return v
}

// attempts joins the recorded attempt logs with the transitions that ended
// them.
func (h *handler) attempts(ctx context.Context, ref platforms.Ref, events []Event) ([]attemptView, error) {
	rls, err := runstate.RunLogs(ctx, h.cfg.RDB, ref)
	if err != nil {
		return nil, err
	}
	out := make([]attemptView, 0, len(rls))
	for i, rl := range rls {
		q := url.Values{"ticket": {ref.Platform + ":" + ref.ID}, "run": {strconv.Itoa(rl.Run)}, "attempt": {strconv.Itoa(rl.Attempt)}}
		a := attemptView{Run: rl.Run, N: rl.Attempt, ID: "attempt-" + strconv.Itoa(rl.Attempt), Instance: rl.Instance, Started: rl.Started,
			Unfinished: true, LogURL: "/status/logs?" + q.Encode()}
		if rl.Run > 1 {
			a.ID = "run-" + strconv.Itoa(rl.Run) + "-" + a.ID
		}
		// A retry's run numbers its attempts from 1 again: the transition
		// that ended this attempt is the one carrying its number after it
		// started and before the next run started.
		var next time.Time
		for _, later := range rls[i+1:] {
			if later.Run != rl.Run {
				next = later.Started
				break
			}
		}
		for _, e := range events {
			if e.Kind == lifecycle.EventTransition && e.From == lifecycle.InProgress && e.Attempt == rl.Attempt &&
				!e.At.Before(rl.Started) && (next.IsZero() || e.At.Before(next)) {
				a.To, a.Outcome, a.Reason, a.RunMS, a.Unfinished = e.To.String(), e.Outcome, e.Reason, e.Run.Milliseconds(), false
			}
		}
		a.Tail, a.TailNote = h.tail(rl)
		out = append(out, a)
	}
	return out, nil
}

// tail is the end of an attempt's log when this replica has it, else a
// note saying where it is.
func (h *handler) tail(rl runstate.RunLog) (string, string) {
	f, err := lifecycle.OpenLog(h.cfg.LogRoots, rl.Path)
	if err != nil {
		return "", fmt.Sprintf("the log is on replica %s (%s), not here: %v", rl.Instance, rl.Path, err)
	}
	defer f.Close()
	note := ""
	if fi, err := f.Stat(); err == nil && fi.Size() > tailBytes {
		if _, err := f.Seek(-tailBytes, io.SeekEnd); err == nil {
			note = fmt.Sprintf("last %d of %d bytes", tailBytes, fi.Size())
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, tailBytes))
	if err != nil {
		return "", "read the log: " + err.Error()
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), note
}

// timeline lays the ticket's transitions out on a strip from its first
// event to its last (or now, while it is not finished).
func timeline(events []Event, now time.Time) strip {
	s := strip{W: 900, H: 28}
	var ts []Event
	for _, e := range events {
		if e.Kind == lifecycle.EventTransition {
			ts = append(ts, e)
		}
	}
	if len(ts) == 0 {
		return s
	}
	first, last := ts[0].At, ts[len(ts)-1].At
	end := last
	if !ts[len(ts)-1].To.Terminal() {
		end = now
	}
	span := end.Sub(first)
	if span <= 0 {
		span = time.Millisecond
	}
	s.Start, s.End = first.UTC().Format("15:04:05.000"), end.UTC().Format("15:04:05.000")
	// A finished ticket's last state has no duration: it gets a fixed
	// slot at the end, and the rest of the strip is scaled into what is left.
	width := s.W
	if ts[len(ts)-1].To.Terminal() {
		width -= terminalSlot
	}
	for i, e := range ts {
		to := end
		if i+1 < len(ts) {
			to = ts[i+1].At
		}
		x := width * float64(e.At.Sub(first)) / float64(span)
		w := max(width*float64(to.Sub(e.At))/float64(span), 2) // a short state still shows
		if i == len(ts)-1 && e.To.Terminal() {
			x, w = width, terminalSlot
		}
		s.Segments = append(s.Segments, chartBar{X: x, Y: 0, W: w, H: s.H, Class: "s-" + e.To.String(),
			Tip: fmt.Sprintf("%s from %s UTC for %s", e.To, e.At.UTC().Format("15:04:05.000"), humanMS(to.Sub(e.At).Milliseconds()))})
	}
	return s
}
