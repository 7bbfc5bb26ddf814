package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

const triggerBase = `
redis: {addr: "127.0.0.1:6379"}
projects:
  - name: app
    platform: github
    repo: acme/app
    token: {env: T}
    polling: {enabled: true}
    pipeline: {command: ["true"]}
`

// Write access is the default: a project without trigger.allow is gated,
// never open to anyone.
func TestTriggerAllowDefaultsToWrite(t *testing.T) {
	t.Parallel()
	c := mustParse(t, triggerBase, map[string]string{"T": "x"})
	if got := c.Projects[0].Trigger.Allow.Access; got != TriggerAccessWrite {
		t.Errorf("trigger.allow.access = %q, want %q", got, TriggerAccessWrite)
	}
	c = mustParse(t, triggerBase+"    trigger: {allow: {access: none, users: [alice]}}\n", map[string]string{"T": "x"})
	if a := c.Projects[0].Trigger.Allow; a.Access != TriggerAccessNone || !slices.Equal(a.Users, []string{"alice"}) {
		t.Errorf("trigger.allow = %+v", a)
	}
}

func TestTriggerAllowValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yml, want string }{
		{"    trigger: {allow: {access: everyone}}\n", "projects[0].trigger.allow.access"},
		{"    trigger: {allow: {access: none}}\n", "projects[0].trigger.allow.users"},
		{"    trigger: {allow: {users: [\" \"]}}\n", "projects[0].trigger.allow.users[0]"},
	} {
		errs := parseErrs(t, triggerBase+tc.yml, map[string]string{"T": "x"})
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%q: errors %q, want one at %s", tc.yml, errs, tc.want)
		}
	}
}

// Teams are a way in of their own: access none with only teams admits
// their members; a blank team name is refused.
func TestTriggerAllowTeams(t *testing.T) {
	t.Parallel()
	c := mustParse(t, triggerBase+"    trigger: {allow: {access: none, teams: [acme/reviewers]}}\n", map[string]string{"T": "x"})
	if a := c.Projects[0].Trigger.Allow; !slices.Equal(a.Teams, []string{"acme/reviewers"}) {
		t.Errorf("trigger.allow = %+v", a)
	}
	errs := parseErrs(t, triggerBase+"    trigger: {allow: {teams: [\"\\t\"]}}\n", map[string]string{"T": "x"})
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "projects[0].trigger.allow.teams[0]") }) {
		t.Errorf("blank team: errors %q", errs)
	}
}

// A platform whose tracker cannot tell team membership refuses teams in
// validate rather than admitting nobody by them silently.
func TestTriggerAllowTeamsNeedThePlatform(t *testing.T) {
	t.Parallel()
	platforms.Register(platforms.Descriptor{Name: "noteams"})
	t.Cleanup(func() { platforms.Unregister("noteams") })
	yml := strings.Replace(triggerBase, "platform: github", "platform: noteams", 1)
	errs := parseErrs(t, yml+"    trigger: {allow: {teams: [devs]}}\n", map[string]string{"T": "x"})
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "projects[0].trigger.allow.teams") }) {
		t.Errorf("errors %q, want one at trigger.allow.teams", errs)
	}
	if errs := parseErrs(t, yml, map[string]string{"T": "x"}); slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "trigger.allow") }) {
		t.Errorf("without teams: errors %q", errs)
	}
}
