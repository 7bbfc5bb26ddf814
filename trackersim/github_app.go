package trackersim

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub App authentication: an app signs a short-lived JWT with its
// private key and trades it for an installation access token, which then
// authenticates API calls like any token.
// https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
// https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-an-installation-access-token-for-a-github-app

const (
	docsAppJWT       = "https://docs.github.com/apps/building-github-apps/authenticating-with-github-apps#authenticating-as-a-github-app"
	docsAccessTokens = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	// installationTokenTTL: installation access tokens expire after one hour.
	installationTokenTTL = time.Hour
	// maxJWTLifetime: GitHub refuses a JWT whose exp is more than 10
	// minutes into the future.
	maxJWTLifetime = 10 * time.Minute
	// jwtClockDrift is the leeway GitHub's docs recommend for iat (set it
	// 60 seconds in the past); the sim accepts that much skew either way.
	jwtClockDrift = 60 * time.Second
)

// App is a GitHub App the sim knows: its id, the public half of its private
// key, and the installations it may mint tokens for.
type App struct {
	ID            int64
	PublicKey     *rsa.PublicKey
	Installations []int64
	// Selected names the repositories an installation was granted
	// (repository_selection "selected"); an installation not in it has
	// "all": every repository the sim holds.
	Selected map[int64][]string
}

// appTokens holds the installation tokens issued, with their expiry and
// the installation each is for.
type appTokens struct {
	mu     sync.Mutex
	apps   []App
	issued map[string]time.Time
	inst   map[string]appInstallation
}

type appInstallation struct {
	app App
	id  int64
}

// installation is the installation token was issued for, while it is valid.
func (a *appTokens) installation(token string, now time.Time) (appInstallation, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.issued[token]
	if !ok || !now.Before(exp) {
		return appInstallation{}, false
	}
	in, ok := a.inst[token]
	return in, ok
}

func (a *appTokens) valid(token string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.issued[token]
	return ok && now.Before(exp)
}

func (s *Sim) githubAppRoutes(mux *http.ServeMux) {
	const tmpl = "/app/installations/{installation_id}/access_tokens"
	mux.HandleFunc("POST /github"+tmpl, func(w http.ResponseWriter, r *http.Request) {
		s.countCall("POST " + tmpl)
		s.ghCreateInstallationToken(w, r)
	})
}

// ghCreateInstallationToken verifies the app's JWT (RS256, iss = app id,
// iat/exp within bounds) and answers 201 with a token valid for an hour. A
// bad JWT is 401, an installation the app does not have 404.
func (s *Sim) ghCreateInstallationToken(w http.ResponseWriter, r *http.Request) {
	now := s.clock()
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		writeGHError(w, http.StatusUnauthorized, "A JSON web token could not be decoded", docsAppJWT)
		return
	}
	app, refusal := s.verifyAppJWT(strings.TrimSpace(jwt), now)
	if refusal != "" {
		writeGHError(w, http.StatusUnauthorized, refusal, docsAppJWT)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("installation_id"), 10, 64)
	if err != nil || !containsID(app.Installations, id) {
		writeGHError(w, http.StatusNotFound, "Not Found", docsAccessTokens)
		return
	}
	var b [20]byte
	_, _ = rand.Read(b[:])
	token := "ghs_" + hex.EncodeToString(b[:])
	exp := now.Add(installationTokenTTL).UTC().Truncate(time.Second)
	s.apps.mu.Lock()
	s.apps.issued[token] = exp
	if s.apps.inst == nil {
		s.apps.inst = map[string]appInstallation{}
	}
	s.apps.inst[token] = appInstallation{app: app, id: id}
	s.apps.mu.Unlock()
	selection := "all"
	if _, only := s.apps.selection(app, id); only {
		selection = "selected"
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"token": token, "expires_at": exp.Format(time.RFC3339),
		"permissions":          map[string]string{"issues": "write", "metadata": "read"},
		"repository_selection": selection,
	})
}

// ghListInstallationRepos is "List repositories accessible to the app
// installation": GET /installation/repositories with an installation
// token, {total_count, repository_selection, repositories}, per_page at
// most 100 with Link pagination; any other token is refused with 403
// (https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation).
func (s *Sim) ghListInstallationRepos(w http.ResponseWriter, r *http.Request, c *ghCall) {
	token, _ := s.authenticate(r)
	in, ok := s.apps.installation(token, s.clock())
	if !ok {
		writeGHError(w, http.StatusForbidden, "You must authenticate with an installation access token in order to list repositories for an installation.", c.doc)
		return
	}
	selected, only := s.apps.selection(in.app, in.id)
	st := s.store
	st.mu.Lock()
	var repos []repository
	for name, rp := range st.repos {
		if strings.Count(name, "/") == 1 && (!only || slices.Contains(selected, name)) {
			repos = append(repos, repository{id: rp.id, fullName: rp.fullName, createdAt: rp.createdAt, archived: rp.archived})
		}
	}
	st.mu.Unlock()
	sort.Slice(repos, func(i, j int) bool { return repos[i].fullName < repos[j].fullName })
	lo, hi := s.paginate(w, r, c, len(repos))
	out := make([]ghRepo, 0, hi-lo)
	for _, rp := range repos[lo:hi] {
		j := s.ghRepo(c.base, rp.fullName, rp.id, rp.createdAt)
		j.Archived = rp.archived
		out = append(out, j)
	}
	selection := "all"
	if only {
		selection = "selected"
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(repos), "repository_selection": selection, "repositories": out})
}

// selection is installation id's selected repositories, and whether it
// has a selection at all ("selected" rather than "all"); read under the
// lock, since GrantRepositories changes it.
func (a *appTokens) selection(app App, id int64) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sel, ok := app.Selected[id]
	return slices.Clone(sel), ok
}

// GrantRepositories adds repos to a "selected" installation, as an
// organisation owner does in the installation's settings, and sends the
// App's webhook (the sim's GitHub hooks of every repository) an
// installation_repositories "added" delivery; RevokeRepositories removes
// them, "removed"
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#installation_repositories).
// An installation with "all" repositories is left as it is.
func (s *Sim) GrantRepositories(installation int64, repos ...string) {
	s.changeSelection(installation, "added", repos)
}

// RevokeRepositories is GrantRepositories' inverse.
func (s *Sim) RevokeRepositories(installation int64, repos ...string) {
	s.changeSelection(installation, "removed", repos)
}

func (s *Sim) changeSelection(installation int64, action string, repos []string) {
	a := &s.apps
	a.mu.Lock()
	changed := false
	for i := range a.apps {
		sel, ok := a.apps[i].Selected[installation]
		if !ok {
			continue
		}
		if action == "added" {
			sel = append(sel, repos...)
		} else {
			sel = slices.DeleteFunc(sel, func(r string) bool { return slices.Contains(repos, r) })
		}
		a.apps[i].Selected[installation] = sel
		changed = true
	}
	a.mu.Unlock()
	if !changed {
		return
	}
	var hooks []*hookQueue
	for _, q := range s.hooks.matching("") {
		if isGitHubHook(q.hook) && q.hook.Repo == "" {
			hooks = append(hooks, q)
		}
	}
	if len(hooks) == 0 {
		return
	}
	base := s.base()
	var listed []map[string]any
	for _, r := range repos {
		id, _, _ := s.store.repoInfo(r)
		_, name, _ := strings.Cut(r, "/")
		listed = append(listed, map[string]any{"id": id, "node_id": fmt.Sprintf("R_sim%d", id), "name": name, "full_name": r, "private": true})
	}
	added, removed := listed, []map[string]any{}
	if action == "removed" {
		added, removed = []map[string]any{}, listed
	}
	sender := s.ghUser(base, humanActor.login)
	s.githubSend("installation_repositories", map[string]any{"action": action,
		"installation":         map[string]any{"id": installation, "repository_selection": "selected"},
		"repository_selection": "selected", "repositories_added": added, "repositories_removed": removed,
		"requester": sender, "sender": sender}, hooks)
}

// verifyAppJWT checks an app JWT and returns the app that signed it, or
// GitHub's message refusing it.
func (s *Sim) verifyAppJWT(token string, now time.Time) (App, string) {
	const undecodable = "A JSON web token could not be decoded"
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return App{}, undecodable
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *int64          `json:"iat"`
		Exp *int64          `json:"exp"`
	}
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil || header.Alg != "RS256" {
		return App{}, undecodable
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return App{}, undecodable
	}
	// GitHub takes the app id as a number or a string (or the client id).
	iss := strings.Trim(string(claims.Iss), `"`)
	appID, err := strconv.ParseInt(iss, 10, 64)
	if err != nil {
		return App{}, "'Issuer' claim ('iss') must be an Integer"
	}
	var app App
	found := false
	for _, a := range s.apps.apps {
		if a.ID == appID {
			app, found = a, true
		}
	}
	if !found {
		return App{}, "Integration not found"
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(app.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		return App{}, undecodable
	}
	if claims.Iat == nil || time.Unix(*claims.Iat, 0).After(now.Add(jwtClockDrift)) {
		return App{}, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	}
	if claims.Exp == nil || !time.Unix(*claims.Exp, 0).After(now.Add(-jwtClockDrift)) ||
		time.Unix(*claims.Exp, 0).After(now.Add(maxJWTLifetime+jwtClockDrift)) {
		return App{}, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	}
	return app, ""
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
