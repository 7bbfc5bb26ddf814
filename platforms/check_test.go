package platforms

import (
	"strings"
	"testing"
)

func TestHookTarget(t *testing.T) {
	for _, c := range []struct {
		url, recv string
		want      bool
	}{
		{"https://a.example/webhooks/github", "", true},
		{"https://a.example/prefix/webhooks/github/", "", true},
		{"https://a.example/webhooks/gitlab", "", false},
		{"https://a.example/webhooks/github", "https://A.example", true},
		{"https://b.example/webhooks/github", "https://a.example", false},
		{"http://a.example/webhooks/github", "https://a.example", false},
		{"://bad", "", false},
	} {
		if got := HookTarget(c.url, "github", c.recv); got != c.want {
			t.Errorf("HookTarget(%q, %q) = %v, want %v", c.url, c.recv, got, c.want)
		}
	}
}

func TestCheckHooks(t *testing.T) {
	opts := CheckOptions{Webhooks: true}
	want := []string{"issues"}
	on := Hook{URL: "https://a/webhooks/github", Active: true, Events: []string{"issues"}}
	off := Hook{URL: "https://a/webhooks/github", Events: []string{"issues"}}
	star := Hook{URL: "https://a/webhooks/github", Active: true, Events: []string{"*"}}
	push := Hook{URL: "https://a/webhooks/github", Active: true, Events: []string{"push"}}
	other := Hook{URL: "https://a/elsewhere", Active: true, Events: []string{"issues"}}
	for name, c := range map[string]struct {
		hooks []Hook
		want  CheckStatus
	}{
		"active with the event": {[]Hook{other, on}, CheckOK},
		"wildcard":              {[]Hook{star}, CheckOK},
		"disabled":              {[]Hook{off}, CheckFail},
		"wrong events":          {[]Hook{push}, CheckFail},
		"none here":             {[]Hook{other}, CheckFail},
		"no hooks":              {nil, CheckFail},
		"one good among bad":    {[]Hook{off, push, on}, CheckOK},
	} {
		r := CheckHooks(c.hooks, "github", opts, want, "issue_comment", "settings")
		if r.Status != c.want || (r.Status == CheckFail && r.Fix == "") {
			t.Errorf("%s: %+v, want %s with a fix on failure", name, r, c.want)
		}
	}
}

// A project acting on comments (CommentsFor set) needs the comment event
// too: a hook without it fails naming the event and the setting; the same
// hook passes for a project that does not act on comments.
func TestCheckHooksCommentEvent(t *testing.T) {
	issues := Hook{URL: "https://a/webhooks/github", Active: true, Events: []string{"issues"}}
	both := Hook{URL: "https://a/webhooks/github", Active: true, Events: []string{"issues", "issue_comment"}}
	on := CheckOptions{Webhooks: true, CommentsFor: "commands.enabled"}
	r := CheckHooks([]Hook{issues}, "github", on, []string{"issues"}, "issue_comment", "settings")
	if r.Status != CheckFail || !strings.Contains(r.Detail, "lacks issue_comment") || !strings.Contains(r.Detail, "commands.enabled") ||
		!strings.Contains(r.Fix, "issue_comment") {
		t.Errorf("hook without the comment event: %+v, want a failure naming issue_comment and commands.enabled", r)
	}
	if r := CheckHooks([]Hook{both}, "github", on, []string{"issues"}, "issue_comment", "settings"); r.Status != CheckOK {
		t.Errorf("hook with the comment event: %+v, want ok", r)
	}
	if r := CheckHooks([]Hook{issues}, "github", CheckOptions{Webhooks: true}, []string{"issues"}, "issue_comment", "settings"); r.Status != CheckOK {
		t.Errorf("project without comments: %+v, want ok", r)
	}
	if r := HooksHidden("github", "settings", on, []string{"issues"}, "issue_comment"); r.Status != CheckWarn ||
		!strings.Contains(r.Fix, "issue_comment") || !strings.Contains(r.Fix, "commands.enabled") {
		t.Errorf("hidden hooks: %+v, want a warning naming issue_comment and commands.enabled", r)
	}
}
