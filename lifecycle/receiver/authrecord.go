package receiver

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/webhooksig"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A wrong webhook secret must look broken, not slow: the TriggerSweeper
// picks a ticket up anyway, tens of seconds later. So the receiver records
// each delivery it authenticated and each it rejected, per project, in
// Redis (keys.WebhookAuth), where `agentsmithd check --webhook` reads it,
// and names in a rejection's log line the project and the secret to check.
//
// Anyone who reaches the receiver can send a delivery with a bad
// signature, and nothing in it can be trusted. So a rejection never
// overwrites what an authenticated delivery recorded: the two are separate
// fields (counts, last times), the key is per configured project (or ""
// per platform), never per anything the sender chose, and each delivery
// writes one pipeline of increments and at most one HSET. check --webhook
// rests its verdict on the authenticated delivery of the test it asked
// for, and reports the rejections it saw beside it as ones anyone could
// have sent.

// Why a delivery was rejected (the reason of an AuthRecord, the log line
// and the metric).
const (
	// ReasonNoSignature: the delivery carries no signature or token (or
	// a signature of another scheme than sha256): the hook in the tracker
	// has no secret set.
	ReasonNoSignature = "no_signature"
	// ReasonMalformedSignature: the signature is not a sha256 hex digest.
	ReasonMalformedSignature = "malformed_signature"
	// ReasonWrongSecret: the signature or token matches no configured
	// secret.
	ReasonWrongSecret = "wrong_secret"
	// ReasonOtherProjectSecret: the delivery names this project's
	// repository but only another project's secret verifies it.
	ReasonOtherProjectSecret = "other_project_secret"
)

// OutcomeAuthenticated is the metric's result for an authenticated
// delivery.
const OutcomeAuthenticated = "authenticated"

// AuthObserver, when Config.Deliveries also implements it, counts each
// delivery authenticated or rejected, by project (as configured, or "" for
// a rejection the receiver could not attribute) and result
// (OutcomeAuthenticated or a Reason). It runs on the request path: it must
// not block.
type AuthObserver interface {
	ObserveAuth(platform, project, result string)
}

// Fields of a keys.WebhookAuth hash. Times are Unix milliseconds of the
// receiver's clock.
const (
	fieldAuthenticated      = "authenticated"
	fieldAuthenticatedAt    = "authenticated_at"
	fieldAuthenticatedEvent = "authenticated_event"
	fieldRejected           = "rejected"
	fieldRejectedAt         = "rejected_at"
	fieldRejectedReason     = "rejected_reason"
	// fieldRejectedSinceAuth counts the rejections since the last
	// authenticated delivery: an authenticated one sets it to 0.
	fieldRejectedSinceAuth = "rejected_since_authenticated"
	fieldReasonPrefix      = "rejected:" // + reason: that reason's count
)

// eventForm is an event name worth storing: the event header is not signed,
// so anything else is stored as "other".
var eventForm = regexp.MustCompile(`^[A-Za-z0-9 _:./-]{1,64}$`)

// recordTimeout bounds the Redis write of a record: the answer to the
// tracker must not wait on it longer.
const recordTimeout = 2 * time.Second

// AuthRecord is one project's record of the deliveries its route
// authenticated and rejected, as ReadAuthRecord returns it.
type AuthRecord struct {
	Authenticated      int64
	AuthenticatedAt    time.Time
	AuthenticatedEvent string
	Rejected           int64
	RejectedAt         time.Time
	RejectedReason     string
	// RejectedSinceAuthenticated counts the rejections since the last
	// authenticated delivery (all of them when there was none).
	RejectedSinceAuthenticated int64
	// Reasons counts the rejections by reason.
	Reasons map[string]int64
}

// ReadAuthRecord reads project's record on platform's route; project ""
// is the platform's rejections no project could be named for. A project
// without deliveries in keys.WebhookAuthTTL has the zero record.
func ReadAuthRecord(ctx context.Context, rdb redis.UniversalClient, platform, project string) (AuthRecord, error) {
	m, err := rdb.HGetAll(ctx, keys.WebhookAuth(platform, project)).Result()
	if err != nil {
		return AuthRecord{}, err
	}
	n := func(f string) int64 { v, _ := strconv.ParseInt(m[f], 10, 64); return v }
	at := func(f string) time.Time {
		if v := n(f); v > 0 {
			return time.UnixMilli(v)
		}
		return time.Time{}
	}
	rec := AuthRecord{Authenticated: n(fieldAuthenticated), AuthenticatedAt: at(fieldAuthenticatedAt),
		AuthenticatedEvent: m[fieldAuthenticatedEvent], Rejected: n(fieldRejected), RejectedAt: at(fieldRejectedAt),
		RejectedReason: m[fieldRejectedReason], RejectedSinceAuthenticated: n(fieldRejectedSinceAuth), Reasons: map[string]int64{}}
	for f := range m {
		if reason, ok := strings.CutPrefix(f, fieldReasonPrefix); ok {
			rec.Reasons[reason] = n(f)
		}
	}
	return rec, nil
}

// rejectReason classifies a Verify error.
func rejectReason(err error) string {
	switch {
	case errors.Is(err, webhooksig.ErrMissing), errors.Is(err, platforms.ErrNoCredential):
		return ReasonNoSignature
	case errors.Is(err, webhooksig.ErrMalformed):
		return ReasonMalformedSignature
	}
	return ReasonWrongSecret
}

// RejectFix is the one-line remedy for a rejection, naming the secret's
// sources (ProjectRoute.Sources, never a value).
func RejectFix(reason string, sources []string) string {
	where := "the project's webhook secret (webhook.secret_env)"
	if len(sources) > 0 {
		where = strings.Join(sources, " or ")
	}
	switch reason {
	case ReasonNoSignature:
		return "the hook in the tracker sends no secret: set its secret to the value of " + where
	case ReasonOtherProjectSecret:
		return "the hook sends another project's secret: set it to the value of " + where
	}
	return "the hook's secret in the tracker differs from " + where + ": make them equal"
}

// holders are the projects whose own secrets include secret, narrowed to
// the one the payload names when it names one of them. ok is false when
// the payload names a configured project that does not hold the secret:
// resolve rejects that delivery (ReasonOtherProjectSecret).
func (rt Route) holders(secret []byte, locator string) (out []ProjectRoute, ok bool) {
	var named []ProjectRoute
	foreign := false
	for _, p := range rt.Projects {
		holds := false
		for _, s := range p.Secrets {
			if string(s) == string(secret) {
				holds = true
			}
		}
		sameLoc := locator != "" && p.Locator != "" && rt.sameLocator(p.Locator, locator)
		switch {
		case holds && sameLoc:
			named = append(named, p)
		case holds:
			out = append(out, p)
		case sameLoc:
			foreign = true
		}
	}
	if len(named) > 0 {
		return named, true
	}
	return out, !foreign
}

// rejectedProject is the project a rejected delivery was meant for: the
// route's only project, or the one whose repository the unauthenticated
// payload names (read only to name it in the log and the record; nothing
// else of it is trusted). false when neither tells.
func (rt Route) rejectedProject(h http.Header, body []byte) (p ProjectRoute, ok bool) {
	if len(rt.Projects) == 1 {
		return rt.Projects[0], true
	}
	defer func() {
		if recover() != nil {
			p, ok = ProjectRoute{}, false
		}
	}()
	ev, _ := rt.Decoder.Parse(h, body)
	if ev.Locator == "" {
		return ProjectRoute{}, false
	}
	for _, p := range rt.Projects {
		if p.Locator != "" && rt.sameLocator(p.Locator, ev.Locator) {
			return p, true
		}
	}
	return ProjectRoute{}, false
}

// recordAuthenticated records an authenticated delivery for each project.
func (rc *Receiver) recordAuthenticated(ctx context.Context, platform string, ev platforms.WebhookEvent, projects []ProjectRoute, log *zap.Logger) {
	event := ev.Name
	if ev.Action != "" && !strings.HasSuffix(ev.Name, ev.Action) { // Jira: "jira:issue_updated", action "issue_updated"
		event += "/" + ev.Action
	}
	if !eventForm.MatchString(event) {
		event = "other"
	}
	now := strconv.FormatInt(rc.cfg.Clock().UnixMilli(), 10)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	pipe := rc.rdb.Pipeline()
	for _, p := range projects {
		k := keys.WebhookAuth(platform, p.Name)
		pipe.HIncrBy(ctx, k, fieldAuthenticated, 1)
		pipe.HSet(ctx, k, fieldAuthenticatedAt, now, fieldAuthenticatedEvent, event, fieldRejectedSinceAuth, 0)
		pipe.Expire(ctx, k, keys.WebhookAuthTTL)
		rc.observeAuth(platform, p.Name, OutcomeAuthenticated)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		log.Debug("webhook record not written", zap.Error(err))
	}
}

// reject records a rejected delivery for project (Name "" when the
// receiver could not tell which) and logs what to fix.
func (rc *Receiver) reject(ctx context.Context, platform, reason string, p ProjectRoute, known bool, remote string, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	k := keys.WebhookAuth(platform, p.Name)
	pipe := rc.rdb.Pipeline()
	pipe.HIncrBy(ctx, k, fieldRejected, 1)
	pipe.HIncrBy(ctx, k, fieldReasonPrefix+reason, 1)
	pipe.HIncrBy(ctx, k, fieldRejectedSinceAuth, 1)
	pipe.HSet(ctx, k, fieldRejectedAt, strconv.FormatInt(rc.cfg.Clock().UnixMilli(), 10), fieldRejectedReason, reason)
	pipe.Expire(ctx, k, keys.WebhookAuthTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		log.Debug("webhook record not written", zap.Error(err))
	}
	rc.observeAuth(platform, p.Name, reason)
	fields := []zap.Field{zap.String("reason", reason), zap.String("remote", remote)}
	if known {
		fields = append(fields, zap.String("project", p.Name), zap.String("setting", "projects["+p.Name+"].webhook"),
			zap.Strings("secretFrom", p.Sources), zap.String("fix", RejectFix(reason, p.Sources)))
	} else {
		fields = append(fields, zap.String("project", ""), zap.String("setting", "webhook.secret_env of the "+platform+" projects"),
			zap.String("fix", "the payload names no configured repository: compare the hook's secret with each "+platform+" project's webhook secret"))
	}
	log.Warn("webhook rejected: authentication failed", fields...)
}

func (rc *Receiver) observeAuth(platform, project, result string) {
	if ao, ok := rc.cfg.Deliveries.(AuthObserver); ok {
		ao.ObserveAuth(platform, project, result)
	}
}
