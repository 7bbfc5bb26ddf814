package jira

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Checker = (*Tracker)(nil)

// checkPermissions are the project permissions the daemon uses: read the
// issue, edit its labels, comment
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-permissions/#api-rest-api-3-mypermissions-get).
var checkPermissions = []string{"BROWSE_PROJECTS", "EDIT_ISSUES", "ADD_COMMENTS"}

const hooksWhere = "Jira Settings → System → WebHooks (an administrator)"

// hookEvents are the events a webhook must send, as its events list names
// them (https://developer.atlassian.com/server/jira/platform/webhooks/);
// hookCommentEvent ("Comment created") carries comment commands and
// `/agent-smith approve`, needed while commands.enabled.
var hookEvents = []string{"jira:issue_created", "jira:issue_updated"}

const hookCommentEvent = EventCommentCreated

// Check verifies, with GETs only, that the token can run this project's
// tickets: who it is (/myself), that the site is the configured deployment
// (serverInfo deploymentType: always "Cloud" on Cloud), that the project
// exists and the token has checkPermissions in it (mypermissions), that
// the REST edit may set labels on its open issues (checkEditScreen), and,
// where the token may list them (Jira administrators only), that a webhook
// sends issue events here. Jira labels are not objects: there is no label
// to check.
func (t *Tracker) Check(ctx context.Context, opts platforms.CheckOptions) []platforms.CheckResult {
	var out []platforms.CheckResult
	var me struct {
		AccountID   string `json:"accountId"` // Cloud
		Name        string `json:"name"`      // Data Center
		DisplayName string `json:"displayName"`
	}
	if code, err := t.get(ctx, t.api+"myself", &me); err != nil {
		return append(out, platforms.HTTPFailure("auth", code, err, platforms.Fixes{
			Unauthorized: "the token (and, on Cloud, jira.email) was refused: create a new API token / personal access token and update token_env/token_file",
			NotFound:     "base_url is not a Jira site's root (https://your-site.atlassian.net/ or your Data Center URL)"}))
	}
	who := me.Name
	if who == "" {
		who = me.AccountID
	}
	out = append(out, platforms.OK("auth", "user %s (%s)", me.DisplayName, who))
	var info struct {
		DeploymentType string `json:"deploymentType"`
		Version        string `json:"version"`
		VersionNumbers []int  `json:"versionNumbers"`
	}
	if code, err := t.get(ctx, t.api+"serverInfo", &info); err != nil {
		return append(out, platforms.HTTPFailure("deployment", code, err, platforms.Fixes{}))
	}
	isCloud := strings.EqualFold(info.DeploymentType, "Cloud")
	dc10 := !isCloud && len(info.VersionNumbers) > 0 && info.VersionNumbers[0] >= 10
	switch {
	case isCloud == t.cloud:
		out = append(out, platforms.OK("deployment", "%s %s", info.DeploymentType, info.Version))
	case isCloud:
		out = append(out, platforms.Fail("deployment", "the site is Jira Cloud; the config says datacenter",
			"set jira.deployment: cloud and jira.email (the API token's account)"))
	default:
		out = append(out, platforms.Fail("deployment", fmt.Sprintf("the site is %s %s; the config says cloud", info.DeploymentType, info.Version),
			"set jira.deployment: datacenter and use a personal access token"))
	}
	if t.jql != "" {
		// A scope spans projects: Jira checks it whole, and each issue's
		// project decides the permissions.
		out = append(out, t.checkScope(ctx))
		out = append(out, platforms.OK("permissions", "asked of each issue's project when it is claimed"))
		out = append(out, platforms.OK("trigger label", "%q: Jira labels need not exist beforehand", opts.TriggerLabel))
		return append(out, t.checkWebhooks(ctx, opts, isCloud, dc10))
	}
	var project struct {
		Key  string `json:"key"`
		Name string `json:"name"`
	}
	if code, err := t.get(ctx, t.api+"project/"+url.PathEscape(t.key), &project); err != nil {
		return append(out, platforms.HTTPFailure("repository", code, err, platforms.Fixes{
			NotFound: "project " + t.key + " does not exist or the token's user may not browse it: check repo and the project's permission scheme"}))
	}
	out = append(out, platforms.OK("repository", "%s (%s)", project.Key, project.Name))
	out = append(out, t.checkMyPermissions(ctx))
	out = append(out, t.checkEditScreen(ctx))
	out = append(out, platforms.OK("trigger label", "%q: Jira labels need not exist beforehand", opts.TriggerLabel))
	return append(out, t.checkWebhooks(ctx, opts, isCloud, dc10))
}

func (t *Tracker) checkMyPermissions(ctx context.Context) platforms.CheckResult {
	const name = "permissions"
	var mp struct {
		Permissions map[string]struct {
			HavePermission bool `json:"havePermission"`
		} `json:"permissions"`
	}
	q := url.Values{"projectKey": {t.key}, "permissions": {strings.Join(checkPermissions, ",")}}
	if code, err := t.get(ctx, t.api+"mypermissions?"+q.Encode(), &mp); err != nil {
		return platforms.HTTPFailure(name, code, err, platforms.Fixes{})
	}
	var missing []string
	for _, p := range checkPermissions {
		if !mp.Permissions[p].HavePermission {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return platforms.Fail(name, "missing "+strings.Join(missing, ", "),
			"grant the token's user "+strings.Join(missing, ", ")+" in project "+t.key+"'s permission scheme")
	}
	return platforms.OK(name, "%s", strings.Join(checkPermissions, ", "))
}

// editScreenTypes is the most issue types checkEditScreen reads the
// editmeta of, and editScreenIssues the most open issues it looks through
// for them: one search page.
const (
	editScreenTypes  = 10
	editScreenIssues = pageSize
)

// checkEditScreen verifies that the REST edit may set labels on the
// project's issues: Jira refuses a labels edit its editmeta does not list
// (refusals.go), which a new project allows and an administrator's screen
// or workflow change takes away. Screens are per issue type, so it reads
// the editmeta of the newest open issue of each issue type among the
// newest editScreenIssues; with no open issue there is nothing to read.
// Docs: POST /rest/api/3/search/jql, GET /rest/api/2/search,
// GET /rest/api/{2|3}/issue/{issueIdOrKey}/editmeta.
func (t *Tracker) checkEditScreen(ctx context.Context) platforms.CheckResult {
	const name = "edit screen"
	jql := fmt.Sprintf(`project = %s AND statusCategory != Done ORDER BY key DESC`, jqlString(t.key))
	type typedIssue struct {
		Key    string `json:"key"`
		Fields struct {
			IssueType *struct {
				Name string `json:"name"`
			} `json:"issuetype"`
		} `json:"fields"`
	}
	var res struct {
		Issues []typedIssue `json:"issues"`
	}
	var err error
	if t.cloud {
		err = t.do(ctx, http.MethodPost, t.api+"search/jql",
			jqlSearchRequest{JQL: jql, Fields: []string{"issuetype"}, MaxResults: editScreenIssues}, &res)
	} else {
		q := url.Values{"jql": {jql}, "fields": {"issuetype"}, "maxResults": {strconv.Itoa(editScreenIssues)}}
		err = t.do(ctx, http.MethodGet, t.api+"search?"+q.Encode(), nil, &res)
	}
	if err != nil {
		return platforms.Warn(name, "could not search the project's open issues: "+oneLine(err.Error()),
			"check the Labels field is on the Edit screen of each issue type the daemon runs")
	}
	var newest []typedIssue // the newest open issue of each type
	seen := map[string]bool{}
	for _, is := range res.Issues {
		typ := ""
		if is.Fields.IssueType != nil {
			typ = is.Fields.IssueType.Name
		}
		if !seen[typ] && len(newest) < editScreenTypes {
			seen[typ] = true
			newest = append(newest, is)
		}
	}
	if len(newest) == 0 {
		return platforms.Warn(name, "no open issue in "+t.key+" to read the editmeta of",
			"make sure the Labels field is on the Edit screen of each issue type the daemon runs (Project settings → Screens)")
	}
	var ok, bad []string
	for _, is := range newest {
		typ := "issue type unknown"
		if is.Fields.IssueType != nil {
			typ = is.Fields.IssueType.Name
		}
		what := fmt.Sprintf("%s (%s)", typ, is.Key)
		var meta struct {
			Fields map[string]json.RawMessage `json:"fields"`
		}
		if _, err := t.get(ctx, t.api+"issue/"+url.PathEscape(is.Key)+"/editmeta", &meta); err != nil {
			return platforms.Warn(name, "could not read the editmeta of "+is.Key+": "+oneLine(err.Error()), "")
		}
		switch _, has := meta.Fields["labels"]; {
		case has:
			ok = append(ok, what)
		case len(meta.Fields) == 0:
			bad = append(bad, what+": no field is editable (its status has jira.issue.editable=false)")
		default:
			bad = append(bad, what+": Labels is not on its Edit screen")
		}
	}
	if len(bad) > 0 {
		return platforms.Fail(name, "the REST edit may not set labels on "+strings.Join(bad, "; "), EditScreenFix)
	}
	return platforms.OK(name, "labels editable on %s", strings.Join(ok, ", "))
}

// oneLine is s on one line, at most 200 characters, for a check's detail.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// The admin webhook resource: Cloud and Data Center before 10 serve
// hooksV1, Data Center 10 moved it to hooksDC10 and answers the old path
// 404 ("Starting from Jira 10.0.x, the URL to webhook resource has changed
// to <JIRA_URL>/rest/jira-webhook/1.0/webhooks",
// https://developer.atlassian.com/server/jira/platform/webhooks/#operations-with-a-webhook-via-the-jira-rest-api).
const (
	hooksV1   = "rest/webhooks/1.0/webhook"
	hooksDC10 = "rest/jira-webhook/1.0/webhooks"
)

// checkWebhooks lists the site's admin webhooks, which needs the Administer
// Jira permission. A self-managed site is read where its serverInfo
// version says the resource is (dc10), and at the other path when that one
// answers 404: a site that hides or misreports its version is still read.
func (t *Tracker) checkWebhooks(ctx context.Context, opts platforms.CheckOptions, cloud, dc10 bool) platforms.CheckResult {
	if !opts.Webhooks {
		return platforms.PollingOnly()
	}
	paths := []string{hooksV1}
	switch {
	case dc10:
		paths = []string{hooksDC10, hooksV1}
	case !cloud:
		paths = []string{hooksV1, hooksDC10}
	}
	// Before 10 a hook says "enabled", from 10 on "active"; either absent
	// counts as enabled.
	var hooks []struct {
		URL     string   `json:"url"`
		Events  []string `json:"events"`
		Enabled *bool    `json:"enabled"`
		Active  *bool    `json:"active"`
	}
	var code int
	var err error
	for _, p := range paths {
		hooks = nil
		if code, err = t.get(ctx, p, &hooks); code != http.StatusNotFound {
			break
		}
	}
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return platforms.HooksHidden(Platform, hooksWhere, opts, hookEvents, hookCommentEvent)
	case err != nil:
		return platforms.HTTPFailure("webhook", code, err, platforms.Fixes{})
	}
	list := make([]platforms.Hook, 0, len(hooks))
	for _, h := range hooks {
		active := (h.Enabled == nil || *h.Enabled) && (h.Active == nil || *h.Active)
		list = append(list, platforms.Hook{URL: h.URL, Active: active, Events: h.Events})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].URL < list[j].URL })
	return platforms.CheckHooks(list, Platform, opts, hookEvents, hookCommentEvent, hooksWhere)
}

// get GETs path into v and returns the answer's status (0 when none came).
func (t *Tracker) get(ctx context.Context, path string, v any) (int, error) {
	req, err := t.client.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req, nil)
	if err != nil {
		if resp == nil {
			return 0, err
		}
		return resp.StatusCode, classify(resp, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("decode %s: %w", path, err)
	}
	return resp.StatusCode, nil
}
