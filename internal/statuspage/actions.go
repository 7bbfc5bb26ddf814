package statuspage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Actor names the status page where an action is recorded (pause key,
// retry's actor, cancel cause).
const Actor = "status page"

// OperatorActor names the page's user in an approval gate's decision.
var OperatorActor = gate.Operator("status-page")

// CancelCause is the cause a cancel from the page leaves on the ticket.
const CancelCause = "cancelled from the status page"

// maxIDLen bounds a ticket id or project name taken from a form.
const maxIDLen = 256

// login checks the token from the login form and starts a session. The
// token never appears in a URL, a log or the page.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.renderLogin(w, r, http.StatusBadRequest, "the form could not be read")
		return
	}
	if !h.sess.checkToken(r.PostForm.Get("token")) {
		h.cfg.Logger.Info("status page: login refused", zap.String("remote", r.RemoteAddr))
		h.renderLogin(w, r, http.StatusUnauthorized, "wrong token")
		return
	}
	h.sess.issue(w, r)
	http.Redirect(w, r, "/status", http.StatusSeeOther)
}

// logout forgets the browser's session (the cookie; sessions are not
// stored, so a copied cookie stays valid until it expires or the token
// changes).
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/status", http.StatusSeeOther)
}

// action runs one button of the page: a same-origin POST with a valid
// session and its CSRF token. It answers 303 back to the page with the
// outcome as a flash message.
func (h *handler) action(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if !fromPage(r) {
		http.Error(w, "403 forbidden: a button press must come from the status page (Origin or Sec-Fetch-Site)", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "413 form too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "400 bad form", http.StatusBadRequest)
		return
	}
	session := h.sess.session(r)
	if session == "" {
		http.Error(w, "403 forbidden: log in at /status first", http.StatusForbidden)
		return
	}
	if !h.sess.checkCSRF(session, r.PostForm.Get("csrf")) {
		http.Error(w, "403 forbidden: bad or missing CSRF token; reload /status", http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	msg, err := h.do(ctx, r.PostForm.Get("action"), r.PostForm.Get("ticket"), r.PostForm.Get("project"), r.PostForm.Get("reason"))
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		http.Error(w, "400 "+bad.Error(), http.StatusBadRequest)
		return
	case err != nil:
		h.cfg.Logger.Warn("status page: action failed", zap.String("action", r.PostForm.Get("action")), zap.Error(err))
		msg = "failed: " + err.Error()
	default:
		h.cfg.Logger.Info("status page: action", zap.String("action", r.PostForm.Get("action")), zap.String("outcome", msg))
	}
	h.sess.setFlash(w, r, msg)
	http.Redirect(w, r, "/status", http.StatusSeeOther)
}

// fromPage reports whether the request says it was sent by a page of this
// origin. http.CrossOriginProtection, in front of action, refuses a request
// whose Sec-Fetch-Site or Origin names another origin but lets one with
// neither through, as a request from a tool; a button press must name its
// origin: Sec-Fetch-Site same-origin, or an Origin (which
// CrossOriginProtection has compared with the Host). Every browser sends
// one of them on a form POST; a tool acts through agentsmithctl instead.
func fromPage(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	return r.Header.Get("Origin") != ""
}

// badRequest is a form naming no valid action, ticket or project.
type badRequest struct{ msg string }

func (b badRequest) Error() string { return b.msg }

// do runs the action and says what happened, for the flash message.
func (h *handler) do(ctx context.Context, action, ticket, project, reason string) (string, error) {
	// A retired project's tickets can still be cancelled or looked at.
	p, ok := h.cfg.Projects.Lookup(platforms.Ref{Project: project})
	if !ok || !clean(project) {
		return "", badRequest{"unknown project"}
	}
	switch action {
	case "pause":
		if err := lifecycle.PauseProject(ctx, h.cfg.RDB, p.Name, Actor, h.cfg.Clock()); err != nil {
			return "", err
		}
		return fmt.Sprintf("paused %s: no new runs start until resume", p.Name), nil
	case "resume":
		was, due, err := lifecycle.ResumeProject(ctx, h.cfg.RDB, p.Name)
		switch {
		case err != nil:
			return "", err
		case !was:
			return p.Name + " was not paused", nil
		}
		if due == 1 {
			return fmt.Sprintf("resumed %s: 1 waiting request made due", p.Name), nil
		}
		return fmt.Sprintf("resumed %s: %d waiting requests made due", p.Name, due), nil
	}
	ref, err := h.ticketRef(p, ticket)
	if err != nil {
		return "", err
	}
	switch action {
	case "requeue":
		if h.cfg.Claims == nil || h.cfg.Queue == nil {
			return "", badRequest{"requeue is not available on this replica"}
		}
		res, err := ops.Requeue(ctx, h.cfg.Claims, h.cfg.Queue, ref)
		switch {
		case err != nil:
			return "", err
		case res.Pushed == nil:
			return fmt.Sprintf("not requeued %s: %s", ref, res.Skipped), nil
		}
		return fmt.Sprintf("requeued %s (attempt %d)", ref, res.Pushed.Attempt), nil
	case "retry":
		if h.cfg.Claims == nil {
			return "", badRequest{"retry is not available on this replica"}
		}
		res, err := h.cfg.Claims.Retry(ctx, ref, lifecycle.SourceOperator, Actor)
		switch {
		case err != nil:
			return "", err
		case !res.Retried():
			return fmt.Sprintf("not retried %s: %s", ref, res.Reason), nil
		}
		return fmt.Sprintf("retried %s (attempt %d)", ref, res.Request.Attempt), nil
	case "approve", "reject":
		return h.decide(ctx, ref, action, reason)
	case "cancel":
		return h.cancel(ctx, ref)
	}
	return "", badRequest{"unknown action"}
}

// decide approves or rejects a parked ticket through the ApprovalGate as
// the operator OperatorActor: the gate's approvers are not checked (the
// page's user holds the status token, an admin's), the decision is
// audited and answered on the ticket under that name.
func (h *handler) decide(ctx context.Context, ref platforms.Ref, kind, reason string) (string, error) {
	if h.cfg.Gate == nil {
		return "", badRequest{kind + " is not available on this replica"}
	}
	d := gate.Decision{Kind: gate.Approve}
	if kind == "reject" {
		if strings.TrimSpace(reason) == "" {
			return "not rejected " + ref.String() + ": say why (the stage before gets it as $AGENTSMITH_REVIEW)", nil
		}
		d = gate.Decision{Kind: gate.Reject, Reason: reason}
	}
	res, err := h.cfg.Gate.DecideAsOperator(ctx, ref, OperatorActor, d)
	switch {
	case err != nil:
		return "", err
	case res.Outcome == claim.CommandNoop || res.Outcome == claim.CommandRefused:
		return fmt.Sprintf("not %sed %s: %s", strings.TrimSuffix(kind, "e"), ref, res.Reason), nil
	}
	return fmt.Sprintf("%s %s %s", res.Outcome, ref, res.Reason), nil
}

// cancel fails a parked ticket through the ApprovalGate as the operator
// OperatorActor, or asks the fleet to stop any other ticket's request or
// run (ops.CancelTicket).
func (h *handler) cancel(ctx context.Context, ref platforms.Ref) (string, error) {
	var pc ops.ParkedCanceller
	if h.cfg.Gate != nil {
		pc = h.cfg.Gate
	}
	res, err := ops.CancelTicket(ctx, h.cfg.RDB, pc, ref, OperatorActor, "", CancelCause, 0)
	switch {
	case err != nil:
		return "", err
	case res.Parked && res.Outcome == gate.OutcomeCancelled:
		return fmt.Sprintf("cancelled %s: it awaited approval and failed %s", ref, res.Reason), nil
	case res.Parked && res.Outcome == gate.OutcomeRecorded:
		return fmt.Sprintf("cancel of %s recorded %s", ref, res.Reason), nil
	case res.Parked:
		return fmt.Sprintf("not cancelled %s: %s", ref, res.Reason), nil
	}
	return fmt.Sprintf("cancel requested for %s: its run or request stops and the ticket fails", ref), nil
}

// ticketRef parses the form's "platform:id" for project p.
func (h *handler) ticketRef(p *lifecycle.Project, ticket string) (platforms.Ref, error) {
	platform, id, ok := strings.Cut(ticket, ":")
	if !ok || platform != p.Platform || id == "" || !clean(id) {
		return platforms.Ref{}, badRequest{"ticket must be platform:id of the project's platform"}
	}
	return platforms.Ref{Platform: platform, Project: p.Name, ID: id}, nil
}

// clean reports whether s is short and free of control characters and
// spaces: it becomes part of Redis keys and log lines.
func clean(s string) bool {
	return s != "" && len(s) <= maxIDLen && strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) < 0
}
