package trackersim

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// This file is how the GitHub dialect validates: the ETags it sends, gzip
// and the weak tags that come with it, If-None-Match on reads and If-Match on
// writes. GitHub documents conditional requests for GETs only: a 304 is free
// of rate limit, and nothing is said of If-Match
// (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate).
// ETags also differ per token: GitHub support, quoted in
// eclipse-csi/otterdog#201, "It's currently expected for ETags to be auth
// token specific" (also github/docs#34689). So the sim mixes the request's
// token into every ETag it sends (tokenETag), and an If-None-Match carrying
// another token's tag is a full 200 that counts against the rate limit. This
// is what a GitHub App pays on each hourly installation-token rotation: the
// first revalidation of every cached page under the new token is a 200.
// Options.GitHubSharedETags restores one tag for every token, kind
// behaviour for tests that name it.
//
// If-Match on a write is compared with the writing token's tag. No source
// says how GitHub scopes If-Match; a tag GitHub only ever sent to one token
// is modelled as that token's, so a client that writes with the tag it read
// is current, and a tag read by another token is stale (412 under the
// modes that answer 412, the write applied as in cli/cli#7167).

// IfMatchMode is how the GitHub dialect answers an If-Match header on a
// write (PATCH of an issue, the issue label endpoints, a new comment).
type IfMatchMode string

const (
	// IfMatchRejectWeak is what GitHub does, and the default. A weak
	// validator (W/"…", which is every ETag GitHub sends with a gzip
	// response, and Go's transport asks for gzip by default) in If-Match is
	// answered 400 and nothing is written: RFC 9110 §13.1.1 requires the
	// strong comparison for If-Match, and GitHub refuses the request instead
	// of failing the precondition (ChronoAIProject/fkst-packages#557,
	// observed 2026-06 on PATCH /repos/{o}/{r}/issues/{n}, "Bad Request
	// (HTTP 400)"; the body's wording is not reported, so the sim's is
	// GitHub's generic one). A strong validator (from an uncompressed
	// response) behaves as in IfMatch412Apply: the only report of a strong
	// If-Match on a GitHub write is cli/cli#7167, where a stale one was
	// answered 412 and the update applied anyway. No report shows GitHub
	// refusing a stale strong If-Match without writing, so the sim does not
	// assume it.
	IfMatchRejectWeak IfMatchMode = "reject-weak"
	// IfMatchIgnore ignores If-Match entirely, as an API that documents no
	// conditional writes may; kind behaviour, for tests that name it.
	IfMatchIgnore IfMatchMode = "ignore"
	// IfMatch412Apply applies every write and answers 412 when any
	// If-Match (weak or strong) did not match the issue's ETag before the
	// write: the behaviour reported for PATCH of a pull request in
	// cli/cli#7167 ("Returned gh: HTTP 412 but the PR body still got
	// updated").
	IfMatch412Apply IfMatchMode = "412-apply"
)

// IfMatchModes lists the modes, the default first.
var IfMatchModes = []IfMatchMode{IfMatchRejectWeak, IfMatchIgnore, IfMatch412Apply}

// ParseIfMatchMode reads a mode's name ("" is the default).
func ParseIfMatchMode(name string) (IfMatchMode, error) {
	if name == "" {
		return IfMatchRejectWeak, nil
	}
	for _, m := range IfMatchModes {
		if string(m) == name {
			return m, nil
		}
	}
	return "", fmt.Errorf("sim: If-Match mode %q: want one of %q", name, IfMatchModes)
}

// issueETag is the issue's version token in its strong form. GitHub
// documents ETags as opaque; deriving it from the store's version counter
// makes every change (labels, comments, state, text) yield a new one, and a
// label set that returns to an earlier value (A→B→A) still gets a fresh one.
// A gzip response carries it weakened (gzipWriter).
func issueETag(sn snapshot) string { return etagFor(sn.repo, sn.number, sn.version) }

func etagFor(repo string, number int, version int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s#%d@%d", repo, number, version))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// tokenETag is the tag a request authenticated with token sees for a
// representation whose token-independent tag is tag. The empty token (an
// unauthenticated request, which only a sim without Options.Tokens
// accepts) sees tag itself, which is also the tag the Go API's Issue.ETag
// carries.
func (s *Sim) tokenETag(token, tag string) string {
	if token == "" || s.sharedETags {
		return tag
	}
	sum := sha256.Sum256([]byte(token + "\x00" + tag))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// requestETag is tokenETag for the request's own token.
func (s *Sim) requestETag(r *http.Request, tag string) string {
	token, _ := s.authenticate(r)
	return s.tokenETag(token, tag)
}

// GitHubETag is the strong ETag a GET of the issue with token would carry
// (the issue's Issue.ETag scoped to the token); "" is an unauthenticated
// request, whose tag is Issue.ETag.
func (s *Sim) GitHubETag(is Issue, token string) string { return s.tokenETag(token, is.ETag) }

// bodyETag is the strong ETag of a collection response: a hash of its bytes.
func bodyETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// etagMatches is the weak comparison of RFC 9110 §8.8.3.2 that
// If-None-Match uses: a comma-separated list of tags or "*", each compared
// with the W/ prefix ignored on both sides, so the W/ tag a gzip response
// carried still revalidates (304) the same representation.
func etagMatches(header, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		if strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// hasWeakTag reports whether an If-Match header names a weak validator.
func hasWeakTag(header string) bool {
	for _, t := range strings.Split(header, ",") {
		if strings.HasPrefix(strings.TrimSpace(t), "W/") {
			return true
		}
	}
	return false
}

// applyWrite performs one API write of issue n under the dialect's If-Match
// mode and answers every failure itself: ok is false when the response has
// been written (400 for a refused weak validator, the store's error, or 412
// after an applied write in the modes that do that).
func (s *Sim) applyWrite(w http.ResponseWriter, r *http.Request, c *ghCall, n int, u update) (sn snapshot, commentID int64, ok bool) {
	h := r.Header.Get("If-Match")
	var cond precondition
	stale := false
	switch {
	case h == "" || s.ifMatch == IfMatchIgnore:
	case s.ifMatch == IfMatchRejectWeak && hasWeakTag(h):
		writeGHError(w, http.StatusBadRequest, "Bad Request", c.doc)
		return snapshot{}, 0, false
	default: // a strong tag under reject-weak, or IfMatch412Apply
		cond = func(version int64) bool {
			stale = !etagMatches(h, s.requestETag(r, etagFor(c.repo, n, version)))
			return true // the write goes ahead whatever the answer
		}
	}
	u.FoldCase = true
	sn, commentID, err := s.store.apply(c.repo, n, cond, c.by, u)
	if err != nil {
		s.writeStoreError(w, c, err)
		return snapshot{}, 0, false
	}
	if stale {
		writeGHError(w, http.StatusPreconditionFailed, "Precondition Failed", c.doc)
		return snapshot{}, 0, false
	}
	return sn, commentID, true
}

// acceptsGzip reports whether a request offers gzip. Go's transport sends
// "Accept-Encoding: gzip" on every request that does not set the header
// itself (net/http Transport.DisableCompression).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// gzipWriter serves a response gzip-compressed, as GitHub does when asked,
// and weakens its ETag at the same time: a gzip body is another
// representation than the identity one, so a server that sends one
// validator for both must mark it weak (RFC 9110 §8.8.1), and GitHub's
// gzip responses carry W/"…" tags (ChronoAIProject/fkst-packages#557; the
// same weakening nginx and caddy apply, caddyserver/caddy#1753). An
// uncompressed response keeps the strong tag.
type gzipWriter struct {
	http.ResponseWriter
	gz      *gzip.Writer
	started bool
	bodyOK  bool
}

func newGzipWriter(w http.ResponseWriter) *gzipWriter { return &gzipWriter{ResponseWriter: w} }

func (g *gzipWriter) WriteHeader(code int) {
	if g.started {
		return
	}
	g.started = true
	h := g.Header()
	if et := h.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		h.Set("ETag", "W/"+et)
	}
	if code != http.StatusNotModified && code != http.StatusNoContent {
		g.bodyOK = true
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipWriter) Write(b []byte) (int, error) {
	if !g.started {
		g.WriteHeader(http.StatusOK)
	}
	if !g.bodyOK {
		return g.ResponseWriter.Write(b)
	}
	if g.gz == nil {
		g.gz = gzip.NewWriter(g.ResponseWriter)
	}
	return g.gz.Write(b)
}

// Close ends the gzip stream; a response with no body gets none.
func (g *gzipWriter) Close() {
	if g.gz != nil {
		_ = g.gz.Close()
	}
}
