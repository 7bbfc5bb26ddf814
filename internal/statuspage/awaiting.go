package statuspage

import (
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// awaitingRow is a ticket parked at an approval gate, as the page lists it
// from the parked index (no tracker call): what it awaits, since when, its
// gate's deadline, and the approve, reject and cancel buttons.
type awaitingRow struct {
	lifecycle.ParkedEntry
	Link string
	// Deadline is when the gate's timeout runs out (zero without one),
	// OnTimeout what happens then (fail or escalate).
	Deadline  time.Time
	OnTimeout string
	// Decide: the page offers approve, reject and cancel (it has a gate).
	Decide bool
}

// awaiting lists st's parked tickets with their gates' deadlines, read
// from the configured projects.
func (h *handler) awaiting(st Status) []awaitingRow {
	out := make([]awaitingRow, 0, len(st.Awaiting))
	for _, e := range st.Awaiting {
		r := awaitingRow{ParkedEntry: e, Link: st.Links[e.Ref.String()], Decide: h.cfg.Gate != nil}
		if p, ok := h.cfg.Projects.Lookup(e.Ref); ok {
			if a := p.ApprovalFor(e.Stage); a != nil && a.Timeout > 0 {
				r.Deadline, r.OnTimeout = e.Since.Add(a.Timeout), a.OnTimeout
			}
		}
		out = append(out, r)
	}
	return out
}
