// Package audit keeps the audit trail of the lifecycle: every Event (label
// transitions, claim outcomes, repairs, stuck flags, tracker refusals) is appended to one
// capped Redis stream, keys.Audit(), by a Writer that is a
// lifecycle.Observer. A Reader answers an operator's questions from the same
// stream: what happened recently, what happened to one ticket, and what is
// happening now (follow).
//
// The stream is the only structure kept. A ticket's history is found by
// scanning the stream newest first and filtering, which costs one
// XREVRANGE page per 500 entries: at the default cap of 100,000 entries a
// full scan is 200 round trips and ~30 MB read, paid only by whoever asks
// (agentsmithctl history), never by the daemon's hot path. Keeping a
// per-ticket index would make every event cost a second write and leave
// index entries pointing at trimmed stream entries.
package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Stream field names. An entry is a flat field list rather than one JSON
// blob so an operator reading the stream with redis-cli sees it plainly.
const (
	fKind      = "kind"
	fAt        = "at"
	fPlatform  = "platform"
	fProject   = "project"
	fTicket    = "ticket"
	fFrom      = "from"
	fTo        = "to"
	fOutcome   = "outcome"
	fAttempt   = "attempt"
	fOwner     = "owner"
	fInstance  = "instance"
	fSource    = "source"
	fRequestID = "request_id"
	fReason    = "reason"
	fHolder    = "holder"
	fHolderSrc = "holder_source"
	fHolderAt  = "holder_since"
	fWait      = "wait_ms"
	fRun       = "run_ms"
	fOp        = "op"
	fStatus    = "status"
	fStage     = "stage"
	fActor     = "actor"
	fApproval  = "approval_wait_ms"
)

// Entry is one stream entry: the event and its stream id, which orders
// entries and encodes when Redis appended it ("<unix ms>-<seq>").
type Entry struct {
	ID    string          `json:"id"`
	Event lifecycle.Event `json:"event"`
}

// encode flattens ev into XADD field/value pairs, leaving out empty ones.
func encode(ev lifecycle.Event) []any {
	v := make([]any, 0, 32)
	add := func(k, val string) {
		if val != "" {
			v = append(v, k, val)
		}
	}
	add(fKind, string(ev.Kind))
	add(fAt, ev.At.UTC().Format(time.RFC3339Nano))
	add(fPlatform, ev.Ref.Platform)
	add(fProject, ev.Ref.Project)
	add(fTicket, ev.Ref.ID)
	if ev.Kind == lifecycle.EventTransition || ev.Kind == lifecycle.EventClaim || ev.Kind == lifecycle.EventStuck {
		add(fFrom, ev.From.String())
		add(fTo, ev.To.String())
	}
	add(fOutcome, ev.Outcome)
	if ev.Attempt != 0 {
		add(fAttempt, strconv.Itoa(ev.Attempt))
	}
	add(fOwner, string(ev.Owner))
	add(fInstance, ev.Instance)
	add(fSource, ev.Source)
	add(fRequestID, ev.RequestID)
	add(fReason, ev.Reason)
	if h := ev.Holder; h != nil {
		add(fHolder, h.Instance)
		add(fHolderSrc, h.Source)
		if !h.Since.IsZero() {
			add(fHolderAt, h.Since.UTC().Format(time.RFC3339Nano))
		}
	}
	if ev.Wait > 0 {
		add(fWait, strconv.FormatInt(ev.Wait.Milliseconds(), 10))
	}
	if ev.Run > 0 {
		add(fRun, strconv.FormatInt(ev.Run.Milliseconds(), 10))
	}
	if ev.ApprovalWait > 0 {
		add(fApproval, strconv.FormatInt(ev.ApprovalWait.Milliseconds(), 10))
	}
	add(fStage, ev.Stage)
	add(fActor, ev.Actor)
	add(fOp, ev.Op)
	if ev.Status != 0 {
		add(fStatus, strconv.Itoa(ev.Status))
	}
	return v
}

// decode is encode's inverse. Unknown or malformed values are left zero: an
// entry written by another version must not make the whole history
// unreadable.
func decode(m redis.XMessage) Entry {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	ms := func(k string) time.Duration {
		n, _ := strconv.ParseInt(str(k), 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	ev := lifecycle.Event{
		Kind:      lifecycle.EventKind(str(fKind)),
		Ref:       platforms.Ref{Platform: str(fPlatform), Project: str(fProject), ID: str(fTicket)},
		Outcome:   str(fOutcome),
		Owner:     lifecycle.Owner(str(fOwner)),
		Instance:  str(fInstance),
		Source:    str(fSource),
		RequestID: str(fRequestID),
		Reason:    str(fReason),
		Wait:      ms(fWait),
		Run:       ms(fRun),
		Stage:     str(fStage),
		Actor:     str(fActor),
	}
	ev.ApprovalWait = ms(fApproval)
	ev.At, _ = time.Parse(time.RFC3339Nano, str(fAt))
	ev.From, _ = lifecycle.ParseState(str(fFrom))
	ev.To, _ = lifecycle.ParseState(str(fTo))
	ev.Attempt, _ = strconv.Atoi(str(fAttempt))
	ev.Op = str(fOp)
	ev.Status, _ = strconv.Atoi(str(fStatus))
	if h := str(fHolder); h != "" {
		since, _ := time.Parse(time.RFC3339Nano, str(fHolderAt))
		ev.Holder = &lifecycle.Holder{Instance: h, Source: str(fHolderSrc), Since: since}
	}
	return Entry{ID: m.ID, Event: ev}
}

// IDTime is when Redis appended the entry with stream id id.
func IDTime(id string) (time.Time, error) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("audit: stream id %q: %w", id, err)
	}
	return time.UnixMilli(n).UTC(), nil
}
