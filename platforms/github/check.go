package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Checker = (*Tracker)(nil)

// hooksWhere is where a user adds the webhook.
const hooksWhere = "the repository's Settings → Webhooks"

// hookEvents are the events a hook must send, as the hook list names them
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads);
// hookCommentEvent ("Issue comments" in the form) carries comment commands and
// `/agent-smith approve`, needed while commands.enabled.
var hookEvents = []string{"issues"}

const hookCommentEvent = "issue_comment"

// Check verifies, with GETs only, that the token (or App installation) can
// run this repository's tickets: it authenticates, may set labels and
// comment, the trigger label exists and a hook sends Issues events here
// (and Issue comments while commands.enabled).
func (t *Tracker) Check(ctx context.Context, opts platforms.CheckOptions) []platforms.CheckResult {
	var out []platforms.CheckResult
	itr, isApp := t.client.Client().Transport.(*ghinstallation.Transport)
	var scopes string
	if isApp {
		// Minting the installation token is the authentication; its answer
		// carries the installation's permissions.
		if _, err := itr.Token(ctx); err != nil {
			return append(out, platforms.HTTPFailure("auth", statusOf(err), err, platforms.Fixes{
				Unauthorized: "check github_app.app_id and private_key (the .pem of this app)",
				NotFound:     "github_app.installation_id: install the app on the repository's account and use that installation's id"}))
		}
		out = append(out, platforms.OK("auth", "GitHub App %d, installation %d", itr.AppID(), itr.InstallationID()))
	} else {
		u, resp, err := t.client.Users.Get(ctx, "")
		if err != nil {
			return append(out, platforms.HTTPFailure("auth", statusOf(err), err, platforms.Fixes{
				Unauthorized: "the token is wrong, expired or revoked: create a new one and update token_env/token_file"}))
		}
		scopes = resp.Header.Get("X-OAuth-Scopes")
		out = append(out, platforms.OK("auth", "user %s", u.GetLogin()))
	}
	repo, _, err := t.client.Repositories.Get(ctx, t.owner, t.name)
	if err != nil {
		return append(out, platforms.HTTPFailure("repository", statusOf(err), err, platforms.Fixes{
			Forbidden: "give the token access to " + t.repo + " (fine-grained: Repository access; org SSO: authorize the token)",
			NotFound:  "repo " + t.repo + " does not exist or this token cannot see it: check repo and the token's repository access"}))
	}
	out = append(out, platforms.OK("repository", "%s (issues %s)", repo.GetFullName(), onOff(repo.GetHasIssues())))
	if isApp {
		out = append(out, t.checkAppPermissions(itr))
	} else {
		out = append(out, checkTokenPermissions(repo.GetPermissions(), scopes, repo.GetPrivate()))
	}
	out = append(out, t.checkLabel(ctx, opts.TriggerLabel))
	return append(out, t.checkHooks(ctx, opts, isApp))
}

// checkTokenPermissions reads the user's role from the repository's
// "permissions" and, for a classic token, its scopes. Setting labels needs
// push access ("Only users with push access can set labels", Update an
// issue, https://docs.github.com/rest/issues/issues#update-an-issue);
// commenting needs read. A fine-grained token's own permissions are not
// readable without writing, so its role alone is reported.
func checkTokenPermissions(perms map[string]bool, scopes string, private bool) platforms.CheckResult {
	const name = "permissions"
	switch {
	case perms == nil:
		return platforms.Warn(name, "the repository answer carries no permissions", "make sure the token's user has Write access")
	case !perms["push"] && perms["triage"]:
		return platforms.Fail(name, "role triage: GitHub's REST API sets labels only with push access",
			"give the token's user the Write role on the repository")
	case !perms["push"]:
		return platforms.Fail(name, "role read: may not set labels", "give the token's user the Write role on the repository")
	}
	if scopes != "" { // a classic token
		set := map[string]bool{}
		for _, s := range strings.Split(scopes, ",") {
			set[strings.TrimSpace(s)] = true
		}
		if !set["repo"] && !(set["public_repo"] && !private) {
			return platforms.Fail(name, "classic token scopes: "+scopes, "create the token with the repo scope")
		}
		return platforms.OK(name, "role push; classic token scopes %s", scopes)
	}
	return platforms.OK(name, "role push (a fine-grained token needs Issues: read and write; not readable without writing)")
}

// checkAppPermissions reads the installation's permissions from its token:
// Issues write to label and comment, Metadata read (every app has it).
func (t *Tracker) checkAppPermissions(itr *ghinstallation.Transport) platforms.CheckResult {
	const name = "permissions"
	p, err := itr.Permissions()
	if err != nil {
		return platforms.Warn(name, "installation permissions unknown: "+err.Error(), "give the app Issues: read and write")
	}
	if p.GetIssues() != "write" {
		return platforms.Fail(name, fmt.Sprintf("installation issues=%q", p.GetIssues()),
			"in the app's settings give it Issues: read and write, then accept the new permissions on the installation")
	}
	return platforms.OK(name, "installation issues=write, metadata=%s", p.GetMetadata())
}

func (t *Tracker) checkLabel(ctx context.Context, label string) platforms.CheckResult {
	const name = "trigger label"
	l, _, err := t.client.Issues.GetLabel(ctx, t.owner, t.name, label)
	if err != nil {
		if statusOf(err) == 404 {
			// The repository may hold it in another case, which is the
			// same label on GitHub (platforms.SameLabel): creating it
			// would be refused.
			if have, ok := t.repoLabelSpelling(ctx, label); ok {
				return platforms.OK(name, "%q exists (as %q)", label, have)
			}
			return platforms.Fail(name, fmt.Sprintf("%q does not exist in %s", label, t.repo),
				fmt.Sprintf("create the label %q in the repository's Issues → Labels", label))
		}
		return platforms.HTTPFailure(name, statusOf(err), err, platforms.Fixes{})
	}
	return platforms.OK(name, "%q exists", l.GetName())
}

// repoLabelSpelling is the repository's label that is label but spelled
// otherwise, if any; a failed listing is no.
func (t *Tracker) repoLabelSpelling(ctx context.Context, label string) (string, bool) {
	opts := &gh.ListOptions{PerPage: perPage}
	for {
		ls, resp, err := t.client.Issues.ListLabels(ctx, t.owner, t.name, opts)
		if err != nil {
			return "", false
		}
		if have, ok := platforms.OtherSpelling(Platform, labelNames(ls), label); ok {
			return have, true
		}
		if resp.NextPage == 0 {
			return "", false
		}
		opts.Page = resp.NextPage
	}
}

func (t *Tracker) checkHooks(ctx context.Context, opts platforms.CheckOptions, isApp bool) platforms.CheckResult {
	if !opts.Webhooks {
		return platforms.PollingOnly()
	}
	// The repository's own hooks, then its organisation's: one
	// organisation webhook serves every discovered repository, and GitHub
	// lists it under the organisation only
	// (https://docs.github.com/rest/orgs/webhooks#list-organization-webhooks).
	repoHooks, repoErr := listAllHooks(func(lo *gh.ListOptions) ([]*gh.Hook, *gh.Response, error) {
		return t.client.Repositories.ListHooks(ctx, t.owner, t.name, lo)
	})
	orgHooks, orgErr := listAllHooks(func(lo *gh.ListOptions) ([]*gh.Hook, *gh.Response, error) {
		return t.client.Organizations.ListHooks(ctx, t.owner, lo)
	})
	// 404: not an admin, not an organisation owner, or a user account
	// (GitHub hides the hooks rather than answer 403).
	hidden := func(err error) bool { c := statusOf(err); return c == 404 || c == 403 }
	switch {
	case repoErr != nil && !hidden(repoErr):
		return platforms.HTTPFailure("webhook", statusOf(repoErr), repoErr, platforms.Fixes{})
	case orgErr != nil && !hidden(orgErr):
		return platforms.HTTPFailure("webhook", statusOf(orgErr), orgErr, platforms.Fixes{})
	case repoErr != nil && (orgErr != nil || len(orgHooks) == 0):
		if isApp {
			return platforms.HooksHidden(Platform, "the app's settings (its own webhook)", opts, hookEvents, hookCommentEvent)
		}
		return platforms.HooksHidden(Platform, hooksWhere, opts, hookEvents, hookCommentEvent)
	}
	return platforms.CheckHooks(append(repoHooks, orgHooks...), Platform, opts, hookEvents, hookCommentEvent, hooksWhere)
}

// listAllHooks follows a hook list's pages.
func listAllHooks(list func(*gh.ListOptions) ([]*gh.Hook, *gh.Response, error)) ([]platforms.Hook, error) {
	var all []platforms.Hook
	lo := &gh.ListOptions{PerPage: perPage}
	for {
		hooks, resp, err := list(lo)
		if err != nil {
			return all, err
		}
		for _, h := range hooks {
			all = append(all, platforms.Hook{URL: h.Config.GetURL(), Active: h.GetActive(), Events: h.Events})
		}
		if resp.NextPage == 0 {
			return all, nil
		}
		lo.Page = resp.NextPage
	}
}

// statusOf is the HTTP status of a go-github (or ghinstallation) error; 0
// when no answer came.
func statusOf(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return he.Response.StatusCode
	}
	return 0
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
