package platforms

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// CheckStatus is the verdict of one pre-flight check.
type CheckStatus string

// Verdicts: a fail stops the daemon from working on the project; a warn is
// something check could not verify or that works but is not as documented.
const (
	CheckOK   CheckStatus = "ok"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
)

// CheckResult is one line of `agentsmithd check`: what was checked, what the
// tracker answered, and for a failure (or warning) the one-line fix. Detail
// never holds a secret: it quotes identities, permissions and URLs only.
type CheckResult struct {
	Name   string      `json:"check"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail"`
	Fix    string      `json:"fix,omitempty"`
}

// CheckOptions says what a project expects of its tracker.
type CheckOptions struct {
	// TriggerLabel must exist where labels are objects (GitHub, GitLab).
	TriggerLabel string
	// LifecycleLabels are the labels the daemon writes itself (its five
	// lifecycle labels under the configured prefix): where creating one
	// is a right the token may lack (Azure DevOps tags), they must exist
	// or the token must hold the right.
	LifecycleLabels []string
	// Webhooks is true when the project has webhook secrets; a polling-only
	// project skips the webhook check.
	Webhooks bool
	// ReceiverURL, when set, is the receiver's public URL
	// ("https://agentsmith.example.com"); a hook must start with it. Empty
	// accepts any hook whose path ends in /webhooks/{platform}.
	ReceiverURL string
	// CommentsFor, when set, names the setting that makes the project act
	// on comments ("commands.enabled", with the approval gates it
	// answers): its hook must also send the platform's comment event, or
	// `/agent-smith approve` and every other comment command never
	// arrive. "" (commands.enabled: false) needs no comment event.
	CommentsFor string
}

// Checker is implemented by trackers that can verify, without writing
// anything, that their credentials and project are fit for the daemon:
// the token authenticates, may read and write tickets and comment, the
// trigger label exists and a webhook points at the receiver.
type Checker interface {
	Check(ctx context.Context, opts CheckOptions) []CheckResult
}

// OK, Warn and Fail build check results.
func OK(name, format string, a ...any) CheckResult {
	return CheckResult{Name: name, Status: CheckOK, Detail: fmt.Sprintf(format, a...)}
}

// Warn is a check that could not be verified or is doubtful; fix says what to do.
func Warn(name, detail, fix string) CheckResult {
	return CheckResult{Name: name, Status: CheckWarn, Detail: detail, Fix: fix}
}

// Fail is a check that stops the daemon from working; fix says what to do.
func Fail(name, detail, fix string) CheckResult {
	return CheckResult{Name: name, Status: CheckFail, Detail: detail, Fix: fix}
}

// Fixes are the remedies for the HTTP statuses a check's request can get.
type Fixes struct {
	Unauthorized, Forbidden, NotFound string
}

// HTTPFailure is the failed check for a request answered code (0: no
// answer). It names the status, never the request's credentials.
func HTTPFailure(name string, code int, err error, f Fixes) CheckResult {
	switch code {
	case http.StatusUnauthorized:
		return Fail(name, "401 Unauthorized: the token was refused", f.Unauthorized)
	case http.StatusForbidden:
		return Fail(name, "403 Forbidden", f.Forbidden)
	case http.StatusNotFound:
		return Fail(name, "404 Not Found", f.NotFound)
	case 0:
		return Fail(name, "no answer: "+shortErr(err), "check base_url and that this host can reach the tracker")
	}
	return Fail(name, fmt.Sprintf("HTTP %d: %s", code, shortErr(err)), "retry later; if it persists, check the tracker's status page")
}

// shortErr is the first line of err, at most 160 bytes.
func shortErr(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// ReceiverPath is the path the daemon's receiver serves platform's
// deliveries on.
func ReceiverPath(platform string) string { return "/webhooks/" + platform }

// HookTarget reports whether a hook URL points at this receiver: its path
// ends in ReceiverPath(platform) and, when receiverURL is set, the URL
// starts with it (scheme and host compared case-insensitively).
func HookTarget(hookURL, platform, receiverURL string) bool {
	u, err := url.Parse(hookURL)
	if err != nil || !strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), ReceiverPath(platform)) {
		return false
	}
	if receiverURL == "" {
		return true
	}
	want, err := url.Parse(strings.TrimSuffix(receiverURL, "/"))
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Scheme, want.Scheme) && strings.EqualFold(u.Host, want.Host) &&
		strings.HasPrefix(u.Path, want.Path)
}

// Hook is a webhook as a tracker lists it, reduced to what the check needs.
type Hook struct {
	URL    string
	Active bool
	// Events are the events it sends, in the platform's own names.
	Events []string
}

// CheckHooks is the webhook check shared by every platform: among hooks,
// one must point at the receiver, be active and send every event in want
// ("*" in a hook's events stands for every event) and, when
// opts.CommentsFor is set, the comment event too. where names the place to
// fix it ("repository Settings → Webhooks").
func CheckHooks(hooks []Hook, platform string, opts CheckOptions, want []string, comment, where string) CheckResult {
	const name = "webhook"
	target := ReceiverPath(platform)
	if opts.ReceiverURL != "" {
		target = strings.TrimSuffix(opts.ReceiverURL, "/") + target
	}
	all := want
	if opts.CommentsFor != "" && comment != "" {
		all = append(slices.Clip(want), comment)
	}
	var found []Hook
	for _, h := range hooks {
		if HookTarget(h.URL, platform, opts.ReceiverURL) {
			found = append(found, h)
		}
	}
	if len(found) == 0 {
		return Fail(name, fmt.Sprintf("no hook of %d points at …%s", len(hooks), target),
			fmt.Sprintf("add a webhook to %s in %s with events %s%s", target, where, strings.Join(all, ", "), commentWhy(opts, comment)))
	}
	var problems []string
	lacksComment := false
	for _, h := range found {
		var missing []string
		for _, w := range all {
			if !slices.Contains(h.Events, w) && !slices.Contains(h.Events, "*") {
				missing = append(missing, w)
			}
		}
		switch {
		case !h.Active:
			problems = append(problems, h.URL+" is disabled")
		case len(missing) > 0:
			p := h.URL + " lacks " + strings.Join(missing, ", ")
			if slices.Contains(missing, comment) && opts.CommentsFor != "" {
				lacksComment = true
				p += fmt.Sprintf(", which %s needs: without it comment commands and approvals never arrive", opts.CommentsFor)
			}
			problems = append(problems, p)
		default:
			return OK(name, "%s (%s)", h.URL, strings.Join(all, ", "))
		}
	}
	fix := fmt.Sprintf("in %s enable the hook and select %s", where, strings.Join(all, ", "))
	if lacksComment {
		fix += ", or set commands.enabled: false to act on labels only (a gate is then approved by its approved label)"
	}
	return Fail(name, strings.Join(problems, "; "), fix)
}

// commentWhy is the reason a fix asks for comment, "" when it is not asked.
func commentWhy(opts CheckOptions, comment string) string {
	if opts.CommentsFor == "" || comment == "" {
		return ""
	}
	return fmt.Sprintf(" (%s: %s)", comment, opts.CommentsFor)
}

// HooksHidden is the warning for a token that may not list hooks: neither
// the hook nor its events (want, and comment when opts.CommentsFor is set)
// are verified.
func HooksHidden(platform, where string, opts CheckOptions, want []string, comment string) CheckResult {
	all := want
	if opts.CommentsFor != "" && comment != "" {
		all = append(slices.Clip(want), comment)
	}
	return Warn("webhook", "this token may not list hooks: neither the hook nor its events are verified",
		fmt.Sprintf("verify by hand in %s that a hook sends %s to …%s%s", where, strings.Join(all, ", "), ReceiverPath(platform), commentWhy(opts, comment)))
}

// PollingOnly is the skipped webhook check of a project without secrets.
func PollingOnly() CheckResult {
	return OK("webhook", "skipped: no webhook secret configured (polling only)")
}
