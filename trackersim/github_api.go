package trackersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// This file is the GitHub dialect's plumbing: routing with per-route call
// counting, authentication, injected faults, the primary rate limit and its
// headers, and error bodies. github.go holds the endpoints.

const (
	docsRateLimit = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
	docsREST      = "https://docs.github.com/rest"
	// docsSecondaryRateLimit is the documentation_url of a secondary limit
	// answer; go-github v60 recognises one by its "secondary-rate-limits"
	// suffix and returns AbuseRateLimitError.
	docsSecondaryRateLimit = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	maxBodyBytes           = 1 << 20
)

// ghCall is the context of one authenticated API request.
type ghCall struct {
	repo  string // "owner/repo" when the route has one
	base  string // scheme://host the request came in on
	by    actor
	doc   string // documentation_url for error bodies
	owner string
}

type ghHandler func(w http.ResponseWriter, r *http.Request, c *ghCall)

// ghRoute registers one endpoint. tmpl is GitHub's path template; it is also
// the Stats.Calls key ("GET /repos/{owner}/{repo}/issues"). free routes do
// not count against the rate limit (GET /rate_limit).
func (s *Sim) ghRoute(mux *http.ServeMux, method, tmpl, doc string, free bool, h ghHandler) {
	key := method + " " + tmpl
	mux.HandleFunc(method+" /github"+tmpl, func(w http.ResponseWriter, r *http.Request) {
		s.count(func(st *Stats) { st.Calls[key]++ })
		s.serveGitHub(w, r, doc, free, &s.rate, s.rateLimit, h)
	})
}

// serveGitHub answers one API request, counting it against rl (whose
// limit per window is limit) unless free.
func (s *Sim) serveGitHub(w http.ResponseWriter, r *http.Request, doc string, free bool, rl *rateLimiter, limit int, h ghHandler) {
	hdr := w.Header()
	hdr.Set("X-GitHub-Request-Id", s.requestID())
	hdr.Set("X-GitHub-Media-Type", "github.v3; format=json")
	hdr.Set("X-GitHub-Api-Version-Selected", "2022-11-28")

	fault := s.faults.api()
	if fault.latency > 0 {
		t := time.NewTimer(fault.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}

	token, authOK := s.authenticate(r)
	b := rl.get(token, s.clock(), limit)
	if !authOK {
		rl.headers(hdr, b, limit)
		msg := "Bad credentials"
		if token == "" {
			msg = "Requires authentication"
		}
		writeGHError(w, http.StatusUnauthorized, msg, docsREST)
		return
	}
	if fault.rateLimit && (fault.shape == RateLimitGitHubSecondary403 || fault.shape == RateLimitGitHubSecondary429) {
		// A secondary limit: 403 or 429 "You have exceeded a secondary rate
		// limit", the primary quota's headers as on any answer (quota left,
		// the hour window's reset) and no Retry-After, which GitHub sends
		// only sometimes
		// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-secondary-rate-limit,
		// hub4j/github-api#1805). The request is not counted against the
		// primary limit: no source says either way.
		code := http.StatusForbidden
		if fault.shape == RateLimitGitHubSecondary429 {
			code = http.StatusTooManyRequests
		}
		rl.headers(hdr, b, limit)
		writeSecondaryLimit(w, code)
		return
	}
	if fault.rateLimit {
		// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-primary-rate-limit
		reset := s.clock().Add(time.Duration(fault.retryAfter) * time.Second)
		hdr.Set("Retry-After", strconv.Itoa(fault.retryAfter))
		hdr.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		hdr.Set("X-RateLimit-Remaining", "0")
		hdr.Set("X-RateLimit-Used", strconv.Itoa(limit))
		hdr.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		hdr.Set("X-RateLimit-Resource", rl.name())
		writeGHError(w, http.StatusTooManyRequests, "API rate limit exceeded (injected fault).", docsRateLimit)
		return
	}
	if fault.badGateway {
		rl.headers(hdr, b, limit)
		writeGHError(w, http.StatusBadGateway, "Server Error", docsREST)
		return
	}
	if !free && rl.exhausted(b, limit) {
		rl.headers(hdr, b, limit)
		writeGHError(w, http.StatusForbidden,
			fmt.Sprintf("API rate limit exceeded for user ID %d.", userID(botLogin)), docsRateLimit)
		return
	}

	if s.secondaryOn && !free && rl != &s.graphqlRate && !s.restSecondary(r, token) {
		s.count(func(st *Stats) { st.SecondaryRefused++ })
		rl.headers(hdr, b, limit)
		writeSecondaryLimit(w, http.StatusForbidden)
		return
	}

	c := &ghCall{base: s.requestBase(r), doc: doc, by: actor{login: botLogin, writer: writerOf(r)}}
	if o, rp := r.PathValue("owner"), r.PathValue("repo"); o != "" && rp != "" {
		c.owner, c.repo = o, o+"/"+rp
	}
	if s.ghRedirectMoved(w, r, c, func() { rl.consume(b); rl.headers(hdr, b, limit) }) {
		return
	}
	if r.Method != http.MethodGet && c.repo != "" && s.store.isArchived(c.repo) {
		// "Repository was archived so is read-only." on every write
		// (https://docs.github.com/en/repositories/archiving-a-github-repository/archiving-repositories).
		rl.consume(b)
		rl.headers(hdr, b, limit)
		writeGHError(w, http.StatusForbidden, "Repository was archived so is read-only.", c.doc)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	rw := &rateWriter{ResponseWriter: w, onHeader: func(code int) {
		// A 304 does not count against the rate limit
		// (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate).
		if code == http.StatusNotModified {
			s.count(func(st *Stats) { st.NotModified++ })
		} else if !free {
			rl.consume(b)
		}
		rl.headers(w.Header(), b, limit)
	}}
	if acceptsGzip(r) {
		gz := newGzipWriter(rw)
		h(gz, r, c)
		if !rw.wrote {
			gz.WriteHeader(http.StatusOK)
		}
		gz.Close()
		return
	}
	h(rw, r, c)
	if !rw.wrote {
		rw.WriteHeader(http.StatusOK)
	}
}

// writeSecondaryLimit answers GitHub's secondary rate limit refusal.
func writeSecondaryLimit(w http.ResponseWriter, code int) {
	writeGHError(w, code, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "+
		"If you reach out to GitHub Support for help, please include the request ID "+w.Header().Get("X-GitHub-Request-Id")+".", docsSecondaryRateLimit)
}

// restSecondary charges a REST request to the token's secondary limits
// (github_secondary.go) and reports whether it may proceed: a read is 1
// point, a write 5 points and one content creation when it creates content
// (createsContent). Minting an App installation token is another limit's
// and not counted.
func (s *Sim) restSecondary(r *http.Request, token string) bool {
	now := s.clock()
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return s.secondary.points(token, false, 1, now)
	}
	if strings.HasPrefix(r.URL.Path, "/github/app/") {
		return true
	}
	if !s.secondary.points(token, false, ghSecondaryWritePoints, now) {
		return false
	}
	return !createsContent(r, s.labelsAsContent) || s.secondary.content(token, now)
}

// writerOf names who made a REST write for the Write log.
func writerOf(r *http.Request) string {
	if w := r.Header.Get("X-Agentsmith-Writer"); w != "" {
		return w
	}
	return r.UserAgent()
}

func (s *Sim) requestID() string {
	n := s.reqSeq.Add(1)
	return fmt.Sprintf("51A1:%04X:%06X:%06X:%08X", n%0xffff, n*7919%0xffffff, n*104729%0xffffff, n)
}

// authenticate returns the request's token and whether it is accepted.
func (s *Sim) authenticate(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	token := ""
	for _, p := range []string{"token ", "Token ", "bearer ", "Bearer "} {
		if t, ok := strings.CutPrefix(auth, p); ok {
			token = strings.TrimSpace(t)
			break
		}
	}
	if len(s.tokens) == 0 {
		return token, true
	}
	return token, token != "" && (slices.Contains(s.tokens, token) || s.apps.valid(token, s.clock()))
}

// rateWriter sets the rate limit headers just before the status line,
// when the status (and so whether the call counts) is known.
type rateWriter struct {
	http.ResponseWriter
	onHeader func(code int)
	wrote    bool
}

func (w *rateWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.onHeader(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *rateWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// rateLimiter keeps one of GitHub's primary rate limits per token: a fixed
// window (an hour for "core", a minute for "search") starting at the
// token's first request.
type rateLimiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	// window is the limit's period; zero means an hour (core).
	window time.Duration
	// resource is X-RateLimit-Resource; "" means "core".
	resource string
}

type bucket struct {
	used  int
	reset time.Time
}

func (rl *rateLimiter) get(token string, now time.Time, _ int) *bucket {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	b, ok := rl.buckets[token]
	if !ok {
		b = &bucket{reset: now.Add(rl.period())}
		rl.buckets[token] = b
	}
	if !now.Before(b.reset) {
		b.used, b.reset = 0, now.Add(rl.period())
	}
	return b
}

func (rl *rateLimiter) exhausted(b *bucket, limit int) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return b.used >= limit
}

func (rl *rateLimiter) consume(b *bucket) {
	rl.mu.Lock()
	b.used++
	rl.mu.Unlock()
}

// headers writes the X-RateLimit-* headers GitHub sends on every response.
func (rl *rateLimiter) headers(h http.Header, b *bucket, limit int) {
	rl.mu.Lock()
	used, reset := b.used, b.reset
	rl.mu.Unlock()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(limit-used, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", rl.name())
}

func (rl *rateLimiter) period() time.Duration {
	if rl.window > 0 {
		return rl.window
	}
	return time.Hour
}

func (rl *rateLimiter) name() string {
	if rl.resource != "" {
		return rl.resource
	}
	return "core"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeGHError(w http.ResponseWriter, code int, msg, doc string) {
	writeJSON(w, code, ghError{Message: msg, DocumentationURL: doc})
}

// writeStoreError maps a store error to GitHub's status and message.
func (s *Sim) writeStoreError(w http.ResponseWriter, c *ghCall, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
	case errors.Is(err, ErrPreconditionFailed):
		writeGHError(w, http.StatusPreconditionFailed, "Precondition Failed", c.doc)
	case errors.Is(err, errLabelsRefused):
		writeGHError(w, http.StatusForbidden, ghRefusedMessage, c.doc)
	case errors.Is(err, errLabelNotOnIssue):
		writeGHError(w, http.StatusNotFound, "Label does not exist", c.doc)
	case errors.Is(err, errInvalid):
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "Issue", Field: "title", Code: "missing_field"}}})
	default:
		s.log.Error("github api", zap.Error(err))
		writeGHError(w, http.StatusInternalServerError, "Server Error", c.doc)
	}
}

// decodeJSON reads a request body; a parse failure is GitHub's 400
// "Problems parsing JSON".
func decodeJSON(w http.ResponseWriter, r *http.Request, c *ghCall, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeGHError(w, http.StatusBadRequest, "Problems parsing JSON", c.doc)
		return false
	}
	return true
}

// issueNumber parses {number}; a non-number is GitHub's 404.
func issueNumber(w http.ResponseWriter, r *http.Request, c *ghCall) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n <= 0 {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return 0, false
	}
	return n, true
}
