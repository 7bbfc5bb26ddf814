// Package receiver is the webhook front door: one authenticated route per
// platform that turns a delivery into a claim. It validates method, size,
// content type and signature before anything else and answers each failure
// with its own status code, so a misconfigured hook is easy to diagnose from
// the platform's delivery log.
package receiver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/pkg/dedup"
	"github.com/agentsmithd/agentsmithd/pkg/health"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/membudget"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Defaults.
const (
	DefaultMaxBody = 1 << 20 // 1 MiB
	// DefaultBodyBudget bounds the bytes of all webhook bodies held at once
	// before their signatures are checked: 64 deliveries of the largest
	// size, where 1,024 connections could otherwise make 1 GiB.
	DefaultBodyBudget = 64 << 20
	// DefaultBudgetWait is how long a delivery waits for room in the body
	// budget before it is answered 503 (the platform redelivers later).
	DefaultBudgetWait = 2 * time.Second
	claimTimeout      = 20 * time.Second
)

// budgetRetryAfter is the Retry-After, in seconds, of a 503 for a full
// body budget.
const budgetRetryAfter = "5"

// chunk is the first buffer a body is read into; it doubles as the body
// grows, each growth reserved in the body budget before it is allocated.
const chunk = 32 << 10

// ProjectRoute is one project reachable through a platform's route.
type ProjectRoute struct {
	Name string
	// Locator is the repository as the payload names it (GitHub
	// "owner/repo"). "" is a scope across repositories (a Jira JQL
	// scope): a delivery no locator claims is its own when its secret
	// verifies, and the claim asks the tracker whether the ticket is in it.
	Locator string
	Secrets [][]byte // any of them authenticates (rotation)
	// Sources name where each secret comes from, as the config names
	// them ("env:GH_WEBHOOK_SECRET", "file:/run/secrets/hook"): what a
	// rejected delivery's log line tells the operator to compare with the
	// tracker's hook. Never a value.
	Sources []string
}

// Route is one platform's webhook endpoint.
type Route struct {
	Platform string
	Decoder  platforms.WebhookDecoder
	Projects []ProjectRoute
	// FoldLocator compares locators case-insensitively, as the platform
	// resolves names: GitHub and GitLab serve "Acme/App" and "acme/app" as
	// one repository, and payloads carry the name as it was created.
	FoldLocator bool

	// secrets are every project's secrets, each once (SetRoutes): the
	// hundreds of repositories of one organisation webhook share one, and
	// a delivery is authenticated with one HMAC, not one per repository.
	secrets [][]byte
}

// Config configures a Receiver.
type Config struct {
	// Gate, when set, decides tickets awaiting approval: the approve and
	// reject commands and the decision labels go to it.
	Gate    Decider
	MaxBody int64 // default DefaultMaxBody
	// BodyTimeout, when positive, is the body's own read deadline, from
	// the moment its headers were read: a sender trickling a body cannot
	// hold the connection for the server's whole read timeout.
	BodyTimeout time.Duration
	DeliveryTTL time.Duration    // default keys.DeliveryTTL; also the oldest ticket change a delivery may report
	Clock       func() time.Time // default time.Now
	CancelTTL   time.Duration    // default keys.CancelTTL
	Logger      *zap.Logger
	// Deliveries, when set, learns the answer to every webhook request
	// (metrics).
	Deliveries DeliveryObserver
	// BodyBudget holds the bytes of every body being read, before its
	// signature is checked: however many connections send at once, the
	// receiver holds no more than this (DefaultBodyBudget, and at least
	// MaxBody, when nil). A delivery that finds no room within BudgetWait
	// (DefaultBudgetWait when 0) is answered 503 with Retry-After.
	BodyBudget *membudget.Budget
	BudgetWait time.Duration
}

// DeliveryObserver sees the status code the receiver answered a webhook
// request with. platform is a configured platform or "unknown", so a
// scanner probing random paths cannot create new label values. It runs on
// the request path: it must not block.
type DeliveryObserver interface {
	ObserveDelivery(platform string, status int)
}

// OutcomeStale answers a delivery whose ticket change is older than the
// de-duplication window (2xx: the platform must not retry it).
const OutcomeStale = "stale"

// deliveryIDForm is what a delivery id may look like: the platforms send
// UUIDs, numbers, "subscription/notification" (Azure DevOps) or a digest.
var deliveryIDForm = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{0,128}$`)

// UnknownPlatform stands for every /webhooks/{platform} path that names no
// configured platform.
const UnknownPlatform = "unknown"

// Receiver serves POST /webhooks/{platform}, /healthz and /readyz.
type Receiver struct {
	cfg    Config
	rdb    redis.UniversalClient
	claims *claim.Service
	routes atomic.Pointer[map[string]Route] // replaced whole by SetRoutes
	log    *zap.Logger
	// bg runs the re-claims close events start; bgCtx ends them on Close.
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// New builds a Receiver.
func New(rdb redis.UniversalClient, claims *claim.Service, routes []Route, cfg Config) *Receiver {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.DeliveryTTL <= 0 {
		cfg.DeliveryTTL = keys.DeliveryTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.BodyBudget == nil {
		cfg.BodyBudget = membudget.New(max(DefaultBodyBudget, cfg.MaxBody))
	}
	if cfg.BudgetWait <= 0 {
		cfg.BudgetWait = DefaultBudgetWait
	}
	rc := &Receiver{cfg: cfg, rdb: rdb, claims: claims, log: cfg.Logger.Named("receiver")}
	rc.SetRoutes(routes)
	rc.bgCtx, rc.bgCancel = context.WithCancel(context.Background())
	return rc
}

// SetRoutes replaces the routes while deliveries are being served:
// discovery adds a repository's project to its platform's route, or takes
// one away, without a restart. A delivery already past its route lookup
// finishes with the routes it found.
func (rc *Receiver) SetRoutes(routes []Route) {
	rm := make(map[string]Route, len(routes))
	for _, r := range routes {
		r.secrets = allSecrets(r.Projects)
		rm[r.Platform] = r
	}
	rc.routes.Store(&rm)
}

func (rc *Receiver) route(platform string) (Route, bool) {
	r, ok := (*rc.routes.Load())[platform]
	return r, ok
}

// Handler returns the HTTP handler.
func (rc *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/webhooks/{platform}", rc.observe(rc.serveWebhook))
	health.Register(mux, func(ctx context.Context) error { return rc.rdb.Ping(ctx).Err() })
	return mux
}

// observe reports the status of each webhook answer to cfg.Deliveries.
func (rc *Receiver) observe(next http.HandlerFunc) http.HandlerFunc {
	if rc.cfg.Deliveries == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		next(sw, r)
		platform := r.PathValue("platform")
		if _, ok := rc.route(platform); !ok {
			platform = UnknownPlatform
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		rc.cfg.Deliveries.ObserveDelivery(platform, sw.status)
	}
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// answer is the JSON body of every webhook response.
type answer struct {
	Outcome string        `json:"outcome"`
	Error   string        `json:"error,omitempty"`
	Project string        `json:"project,omitempty"`
	Claim   *claim.Result `json:"claim,omitempty"`
	// Cancel is the cause of a cancellation this delivery requested.
	Cancel string `json:"cancel,omitempty"`
	// Reason says why an authenticated delivery was ignored, where it is
	// worth telling (an unconfigured project, a subscription sending too
	// little), so the tracker's delivery log shows it.
	Reason string `json:"reason,omitempty"`
}

// OutcomeDiscovery answers (202) a repository delivery: every replica
// will list its discovered repositories again.
const OutcomeDiscovery = "discovery"

// requestDiscovery bumps the counter every replica's discovery refresher
// reads (keys.Discovery), so a repository created, archived or added to
// the App's installation is served, or left, within one
// discovery.signal_check instead of one discovery.interval. Redeliveries
// need no de-duplication: a second bump costs one more listing, and the
// refreshers read the counter at most once per check, however many bumps.
func (rc *Receiver) requestDiscovery(w http.ResponseWriter, r *http.Request, ev platforms.WebhookEvent, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(r.Context(), claimTimeout)
	defer cancel()
	if err := rc.rdb.Incr(ctx, keys.Discovery()).Err(); err != nil {
		log.Warn("repository webhook deferred: Redis unreachable", zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, answer{Outcome: "unavailable", Error: "redis unreachable"})
		return
	}
	log.Info("repositories changed: discovery will list them again", zap.String("event", ev.Name+"/"+ev.Action),
		zap.String("repository", ev.Locator))
	writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeDiscovery})
}

// OutcomeIgnored answers (202) an authenticated, well-formed delivery the
// daemon does not act on. Never a 4xx: trackers count failed deliveries
// and GitLab disables a hook after four in a row (gitlab-org/gitlab!166329).
const OutcomeIgnored = "ignored"

func (rc *Receiver) serveWebhook(w http.ResponseWriter, r *http.Request) {
	platform := r.PathValue("platform")
	route, ok := rc.route(platform)
	if !ok {
		writeJSON(w, http.StatusNotFound, answer{Outcome: "rejected", Error: "no webhook route for platform " + platform})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, answer{Outcome: "rejected", Error: "use POST"})
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, answer{Outcome: "rejected", Error: "content type must be application/json"})
			return
		}
	}
	if rc.cfg.BodyTimeout > 0 {
		// Wall-clock: a connection deadline is not the injected clock's.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(rc.cfg.BodyTimeout))
	}
	if r.ContentLength > rc.cfg.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, answer{Outcome: "rejected", Error: "body exceeds the configured limit"})
		return
	}
	body, release, err := rc.readBody(w, r)
	defer release()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.Is(err, errNoRoom) {
			log := rc.log.With(zap.String("platform", platform))
			log.Warn("webhook deferred: the body budget is full", zap.String("remote", r.RemoteAddr),
				zap.Int64("budget", rc.cfg.BodyBudget.Limit()))
			w.Header().Set("Retry-After", budgetRetryAfter)
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusServiceUnavailable, answer{Outcome: "unavailable", Error: "too many deliveries in flight"})
			return
		}
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, answer{Outcome: "rejected", Error: "body exceeds the configured limit"})
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, answer{Outcome: "rejected", Error: "body not received in time"})
			return
		}
		writeJSON(w, http.StatusBadRequest, answer{Outcome: "rejected", Error: "could not read body"})
		return
	}
	log := rc.log.With(zap.String("platform", platform))
	matched, err := route.Decoder.Verify(r.Header, body, route.secrets)
	if err != nil {
		p, known := route.rejectedProject(r.Header, body)
		rc.reject(r.Context(), platform, rejectReason(err), p, known, r.RemoteAddr, log)
		writeJSON(w, http.StatusUnauthorized, answer{Outcome: "rejected", Error: "signature missing or invalid"})
		return
	}
	ev, err := route.Decoder.Parse(r.Header, body)
	if holders, ok := route.holders(route.secrets[matched], ev.Locator); ok {
		rc.recordAuthenticated(r.Context(), platform, ev, holders, log)
	}
	if err != nil {
		log.Warn("webhook rejected: malformed", zap.Error(err))
		writeJSON(w, http.StatusBadRequest, answer{Outcome: "rejected", Error: "malformed payload"})
		return
	}
	if !deliveryIDForm.MatchString(ev.DeliveryID) {
		// The id header is not signed: a long or odd one would only be a
		// Redis key an attacker chose.
		writeJSON(w, http.StatusBadRequest, answer{Outcome: "rejected", Error: "delivery id longer than 128 characters or outside [A-Za-z0-9._:/+=-]"})
		return
	}
	switch ev.Kind {
	case platforms.EventPing:
		writeJSON(w, http.StatusOK, answer{Outcome: "pong"})
		return
	case platforms.EventIgnored:
		if ev.Reason != "" {
			log.Warn("webhook ignored", zap.String("event", ev.Name+"/"+ev.Action), zap.String("reason", ev.Reason))
		}
		writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeIgnored, Reason: ev.Reason})
		return
	case platforms.EventRepositories:
		rc.requestDiscovery(w, r, ev, log)
		return
	}
	project, status := route.resolve(r.Header, body, ev.Locator)
	switch status {
	case http.StatusOK:
	case http.StatusNotFound:
		// Authenticated, but for a project this daemon does not serve: a
		// group or organisation hook (GitLab group, GitHub organisation,
		// Jira admin webhook without a JQL filter) sends every project's
		// events. An event we do not act on must never count towards the
		// tracker disabling the hook (gitlab-org/gitlab!166329).
		log.Info("webhook for an unconfigured project ignored", zap.String("locator", ev.Locator))
		writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeIgnored, Reason: "no project configured for " + ev.Locator})
		return
	default:
		p, _ := route.rejectedProject(r.Header, body)
		rc.reject(r.Context(), platform, ReasonOtherProjectSecret, p, p.Name != "", r.RemoteAddr, log)
		writeJSON(w, status, answer{Outcome: "rejected", Error: "no project configured for " + ev.Locator + " with this secret"})
		return
	}
	p, ok := rc.claims.Projects()[project]
	if !ok {
		// Routed a moment before discovery retired the project (its
		// repository archived or gone): nothing new starts for it.
		writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeIgnored, Reason: "project " + project + " is no longer watched"})
		return
	}
	log = log.With(zap.String("project", project), zap.String("delivery", ev.DeliveryID), zap.String("event", ev.Name+"/"+ev.Action))
	ctx, cancel := context.WithTimeout(r.Context(), claimTimeout)
	defer cancel()
	if !ev.At.IsZero() && rc.cfg.Clock().Sub(ev.At) > rc.cfg.DeliveryTTL {
		// Older than the de-dup records: a replay of a captured body whose
		// record expired. Not handled; the TriggerSweeper finds a real
		// trigger that was missed.
		log.Info("webhook ignored: ticket change older than the de-duplication window", zap.Time("changedAt", ev.At))
		writeJSON(w, http.StatusOK, answer{Outcome: OutcomeStale, Project: project})
		return
	}
	command, isCommand := "", false
	if ev.Kind == platforms.EventComment {
		if command, isCommand = p.Commands.Parse(ev.Comment); !isCommand || ev.Ticket == nil {
			// Most comments: answered without touching Redis.
			writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeIgnored, Project: project, Reason: "not a command"})
			return
		}
	}
	sum := sha256.Sum256(body)
	dkeys := []string{keys.DeliveryBody(platform, hex.EncodeToString(sum[:]))}
	if ev.DeliveryID != "" {
		dkeys = append(dkeys, keys.Delivery(platform, ev.DeliveryID))
	}
	dup, err := dedup.SeenAny(ctx, rc.rdb, rc.cfg.DeliveryTTL, dkeys...)
	if err != nil {
		log.Warn("webhook deferred: Redis unreachable", zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, answer{Outcome: "unavailable", Error: "redis unreachable"})
		return
	}
	if dup {
		writeJSON(w, http.StatusOK, answer{Outcome: "duplicate", Project: project})
		return
	}
	t := ev.Ticket
	t.Ref.Project = project
	t.Ref.ID = route.canonicalID(project, ev.Locator, t.Ref.ID)
	if isCommand {
		rc.runCommand(t.Ref, ev.Actor, command, ev.Comment, log)
		writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeCommand, Project: project})
		return
	}
	if rc.decisionLabel(p, t.Ref, &ev, log) {
		writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeCommand, Project: project})
		return
	}
	if !t.Open {
		rc.retryBlocked(p, t.Ref.ID, log)
	}
	if cause, err := rc.requestCancel(ctx, p, t, log); cause != "" || err != nil {
		if err != nil {
			_ = dedup.Forget(context.WithoutCancel(ctx), rc.rdb, dkeys...)
			log.Warn("cancel request failed", zap.Error(err))
			writeJSON(w, http.StatusServiceUnavailable, answer{Outcome: "unavailable", Project: project, Error: "redis unreachable"})
			return
		}
		log.Info("cancel requested", zap.String("ticketId", t.Ref.ID), zap.String("cause", cause))
		writeJSON(w, http.StatusAccepted, answer{Outcome: OutcomeCancelRequested, Project: project, Cancel: cause})
		return
	}
	if reason := rc.claims.PreCheck(p, t); reason != "" {
		// Decided from the payload alone: no tracker call spent.
		writeJSON(w, http.StatusAccepted, answer{Outcome: string(lifecycle.NotEligible), Project: project,
			Claim: &claim.Result{Outcome: lifecycle.NotEligible, Ticket: t.Ref.String(), Reason: reason + " (from payload)"}})
		return
	}
	actor := "" // who added the trigger label, if this change did
	if ev.AddedLabel(p.TriggerLabel) {
		actor = ev.Actor
	}
	// A refusal for good is an answer (2xx): a redelivery would be refused
	// again, and GitLab counts failed deliveries towards disabling the hook.
	res, err := rc.claims.ClaimSnapshot(ctx, t, lifecycle.SourceWebhook, 1, actor, ev.At)
	if err != nil {
		// Let a redelivery of this delivery try again.
		_ = dedup.Forget(context.WithoutCancel(ctx), rc.rdb, dkeys...)
		log.Warn("claim failed", zap.Error(err))
		status := http.StatusBadGateway
		if errors.Is(err, claim.ErrRedisUnavailable) {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, answer{Outcome: "error", Project: project, Error: "claim failed; redeliver to retry"})
		return
	}
	writeJSON(w, http.StatusAccepted, answer{Outcome: string(res.Outcome), Project: project, Claim: &res})
}

func allSecrets(projects []ProjectRoute) [][]byte {
	var secrets [][]byte
	seen := map[string]bool{}
	for _, p := range projects {
		for _, s := range p.Secrets {
			if !seen[string(s)] {
				seen[string(s)] = true
				secrets = append(secrets, s)
			}
		}
	}
	return secrets
}

// sameLocator compares locators as the platform does.
func (rt Route) sameLocator(a, b string) bool {
	if rt.FoldLocator {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// resolve finds the project the payload names whose own secrets verify the
// delivery: one project's secret never authenticates deliveries for another,
// and every project sharing a secret (an organisation's webhook) gets its
// own deliveries, whichever project's copy of the secret matched first.
//
// A scope (ProjectRoute.Locator "") takes a delivery that no project of its
// locator verified, when the scope's own secret does: each scope has its
// own webhook and secret (config refuses two scopes sharing one), since the
// payload cannot say which scope's filter sent it.
func (rt Route) resolve(h http.Header, body []byte, locator string) (string, int) {
	known := false
	for _, p := range rt.Projects {
		if p.Locator == "" || !rt.sameLocator(p.Locator, locator) {
			continue
		}
		known = true
		if _, err := rt.Decoder.Verify(h, body, p.Secrets); err == nil {
			return p.Name, http.StatusOK
		}
	}
	for _, p := range rt.Projects {
		if p.Locator != "" || len(p.Secrets) == 0 {
			continue
		}
		if _, err := rt.Decoder.Verify(h, body, p.Secrets); err == nil {
			return p.Name, http.StatusOK
		}
	}
	if known {
		return "", http.StatusUnauthorized
	}
	return "", http.StatusNotFound
}

// canonicalID spells a ticket id with the configured locator where the
// payload spelled it in another case ("Acme/App#3" → "acme/app#3"), so the
// webhook, the poller and the repairs use one Redis key per ticket.
func (rt Route) canonicalID(project, locator, id string) string {
	for _, p := range rt.Projects {
		if p.Name == project && p.Locator != "" && p.Locator != locator && strings.HasPrefix(id, locator) {
			return p.Locator + id[len(locator):]
		}
	}
	return id
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
