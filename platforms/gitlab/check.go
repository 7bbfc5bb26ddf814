package gitlab

import (
	"context"
	"fmt"
	"path"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.Checker = (*Tracker)(nil)

// GitLab access levels (https://docs.gitlab.com/api/members/#roles).
const (
	levelGuest      = 10
	levelPlanner    = 15 // GitLab 17.7+
	levelReporter   = 20
	levelMaintainer = 40
)

const hooksWhere = "the project's Settings → Webhooks"

// hookEvents are the trigger flags a hook must have set, as the hook list
// names them (https://docs.gitlab.com/api/project_webhooks/); hookCommentEvent
// ("Comments" in the form: Note Hook deliveries) carries comment commands
// and `/agent-smith approve`, needed while commands.enabled.
var hookEvents = []string{"issues_events"}

const hookCommentEvent = "note_events"

// Check verifies, with GETs only, that the token can run this project's
// tickets. Labelling an issue needs Planner or Reporter (GitLab's
// permissions table, https://docs.gitlab.com/user/permissions/#project-planning,
// "Add labels"; users confirmed Reporters can change issue labels in
// gitlab-org/gitlab#15638, and Guests cannot, gitlab-org/gitlab#420047);
// commenting needs Guest. So Planner (15) is the least the daemon needs.
// Listing hooks needs Maintainer; below it the webhook is a warning.
func (t *Tracker) Check(ctx context.Context, opts platforms.CheckOptions) []platforms.CheckResult {
	var out []platforms.CheckResult
	user, err := t.api.currentUser(ctx)
	if err != nil {
		return append(out, platforms.HTTPFailure("auth", statusOf(err), err, platforms.Fixes{
			Unauthorized: "the token is wrong, expired or revoked: create an access token with the api scope and update token_env/token_file",
			Forbidden:    "the token lacks the api (or read_user) scope: create one with the api scope"}))
	}
	out = append(out, platforms.OK("auth", "user %s", user))
	level, path, err := t.api.accessLevel(ctx, t.repo)
	if err != nil {
		return append(out, platforms.HTTPFailure("repository", statusOf(err), err, platforms.Fixes{
			Forbidden: "give the token's user access to " + t.repo,
			NotFound:  "project " + t.repo + " does not exist or the token's user is not a member: check repo and membership"}))
	}
	out = append(out, platforms.OK("repository", "%s", path))
	out = append(out, checkAccessLevel(level))
	if err := t.api.label(ctx, t.repo, opts.TriggerLabel); err != nil {
		if statusOf(err) == 404 {
			out = append(out, platforms.Fail("trigger label", fmt.Sprintf("%q does not exist in %s", opts.TriggerLabel, t.repo),
				fmt.Sprintf("create the label %q in the project's Manage → Labels (or its group's)", opts.TriggerLabel)))
		} else {
			out = append(out, platforms.HTTPFailure("trigger label", statusOf(err), err, platforms.Fixes{}))
		}
	} else {
		out = append(out, platforms.OK("trigger label", "%q exists", opts.TriggerLabel))
	}
	if !opts.Webhooks {
		return append(out, platforms.PollingOnly())
	}
	return append(out, t.checkHooks(ctx, opts))
}

// checkHooks reads the project's hooks and those of each group above it
// (a group hook serves every project below it, and GitLab lists it under
// the group only): one group webhook serving a discovered group passes.
// Listing a group's hooks needs Owner; a group the token may not read is
// skipped.
func (t *Tracker) checkHooks(ctx context.Context, opts platforms.CheckOptions) platforms.CheckResult {
	hooks, err := t.api.projectHooks(ctx, t.repo)
	hidden := func(err error) bool { return statusOf(err) == 403 || statusOf(err) == 404 }
	if err != nil && !hidden(err) {
		return platforms.HTTPFailure("webhook", statusOf(err), err, platforms.Fixes{})
	}
	projectHidden := err != nil
	groups := 0
	for g := path.Dir(t.repo); g != "." && g != "/"; g = path.Dir(g) {
		gh, gerr := t.api.groupHooks(ctx, g)
		if gerr != nil {
			if hidden(gerr) {
				continue
			}
			return platforms.HTTPFailure("webhook", statusOf(gerr), gerr, platforms.Fixes{})
		}
		groups++
		hooks = append(hooks, gh...)
	}
	if projectHidden && groups == 0 {
		return platforms.HooksHidden(Platform, hooksWhere, opts, hookEvents, hookCommentEvent)
	}
	return platforms.CheckHooks(hooks, Platform, opts, hookEvents, hookCommentEvent, hooksWhere)
}

func checkAccessLevel(level int) platforms.CheckResult {
	const name = "permissions"
	role := map[int]string{0: "none", levelGuest: "Guest", levelPlanner: "Planner", levelReporter: "Reporter",
		30: "Developer", levelMaintainer: "Maintainer", 50: "Owner"}[level]
	if role == "" {
		role = fmt.Sprint(level)
	}
	if level < levelPlanner {
		return platforms.Fail(name, fmt.Sprintf("access level %s (%d): may comment but not label", role, level),
			"make the token's user a Reporter (or Planner) of the project")
	}
	return platforms.OK(name, "access level %s (%d): may label and comment", role, level)
}
