package config

import (
	"strings"
	"testing"
	"time"
)

// A stage's gate reads from the short form and the long form, with the
// defaults filled in.
func TestStageGateForms(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(staged, "        - name: test\n", `        - name: test
          gate: approval
`, 1)
	doc = strings.Replace(doc, "        - name: implement\n", `        - name: implement
          gate: {approval: {approvers: {users: [dana]}, distinct_from_trigger: true, max_rejections: 5, timeout: 48h, on_timeout: fail}}
`, 1)
	pl := mustParse(t, doc, map[string]string{"T": "t"}).Projects[0].Pipeline
	if g := pl.Stages[0].Gate; g != nil {
		t.Errorf("plan has gate %+v, want none", g)
	}
	impl := pl.Stages[1].Gate
	if impl == nil || impl.Approval == nil {
		t.Fatalf("implement gate %+v, want an approval", impl)
	}
	if a := impl.Approval; !a.DistinctFromTrigger || a.MaxRejections != 5 || a.Approvers == nil ||
		a.Approvers.Access != TriggerAccessWrite || len(a.Approvers.Users) != 1 || a.Approvers.Users[0] != "dana" {
		t.Errorf("implement approval %+v (approvers %+v)", a, a.Approvers)
	}
	if a := impl.Approval; a.Timeout != 48*time.Hour || a.OnTimeout != OnTimeoutFail {
		t.Errorf("implement deadline %s %q, want 48h fail", a.Timeout, a.OnTimeout)
	}
	if a := pl.Stages[2].Gate.Approval; a.Timeout != 0 || a.OnTimeout != OnTimeoutEscalate {
		t.Errorf("short form deadline %s %q, want none, escalate", a.Timeout, a.OnTimeout)
	}
	test := pl.Stages[2].Gate
	if test == nil || test.Approval == nil || test.Approval.MaxRejections != DefaultMaxRejections || test.Approval.Approvers != nil {
		t.Errorf("the short form gives %+v, want an approval with the defaults", test)
	}
}

// The first stage cannot have a gate; the short form names a kind of gate;
// approvers are checked as trigger.allow is.
func TestStageGateValidation(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(staged, "          max_attempts: 1\n", "          max_attempts: 1\n          gate: approval\n", 1)
	bad = strings.Replace(bad, "        - name: test\n", `        - name: test
          gate: {approval: {approvers: {access: none}, max_rejections: -1, timeout: -1h, on_timeout: wait, mention: ["a b"]}}
        - name: ship
          gate: timer
        - name: docs
          gate: {}
`, 1)
	errs := strings.Join(parseErrs(t, bad, map[string]string{"T": "t"}), "\n")
	for _, want := range []string{
		`projects[0].pipeline.stages[0].gate: the first stage cannot have a gate`,
		`projects[0].pipeline.stages[2].gate.approval.max_rejections: must be at least 1`,
		`projects[0].pipeline.stages[2].gate.approval.approvers.users: users or teams required when access is "none": otherwise nobody may approve`,
		`projects[0].pipeline.stages[3].gate: "timer": want "approval" or a mapping such as {approval: {max_rejections: 2}} or {after: 1h}`,
		`projects[0].pipeline.stages[2].gate.approval.timeout: must not be negative`,
		`projects[0].pipeline.stages[2].gate.approval.on_timeout: "wait": want "escalate" or "fail"`,
		`projects[0].pipeline.stages[2].gate.approval.mention[0]: must be one handle`,
		`projects[0].pipeline.stages[4].gate: want a kind of gate: approval or after`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
}

// A timer gate reads from {after: <duration>}; after must be positive,
// and a stage has an approval or a timer, not both.
func TestStageTimerGate(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(staged, "        - name: implement\n", "        - name: implement\n          gate: {after: 90m}\n", 1)
	pl := mustParse(t, doc, map[string]string{"T": "t"}).Projects[0].Pipeline
	if g := pl.Stages[1].Gate; g == nil || g.After != 90*time.Minute || g.Approval != nil {
		t.Errorf("implement gate %+v, want a timer of 90m alone", g)
	}
	bad := strings.Replace(staged, "        - name: implement\n", "        - name: implement\n          gate: {after: -1h}\n", 1)
	bad = strings.Replace(bad, "        - name: test\n", "        - name: test\n          gate: {after: 1h, approval: {max_rejections: 1}}\n", 1)
	errs := strings.Join(parseErrs(t, bad, map[string]string{"T": "t"}), "\n")
	for _, want := range []string{
		`projects[0].pipeline.stages[1].gate.after: must be positive`,
		`projects[0].pipeline.stages[2].gate: one kind of gate: approval or after, not both`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
}

// An approver list naming an account only a token acts as (a GitHub App's
// <slug>[bot], a GitLab access token's bot user) fails validation, naming
// the field: such an account is what the daemon or a pipeline writes
// with. trigger.allow is checked when it is a gate's approvers.
func TestGateApproversRefuseBotAccounts(t *testing.T) {
	t.Parallel()
	withGate := func(doc, gate string) string {
		return strings.Replace(doc, "        - name: implement\n", "        - name: implement\n          gate: "+gate+"\n", 1)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"github app bot", withGate(staged, `{approval: {approvers: {access: none, users: [dana, "agentsmith-app[bot]"]}}}`),
			`projects[0].pipeline.stages[1].gate.approval.approvers.users[1]: "agentsmith-app[bot]" is a GitHub App's bot account, which may not approve stage implement`},
		{"trigger.allow as approvers", withGate(strings.Replace(staged, "    polling: {enabled: true}\n",
			"    polling: {enabled: true}\n    trigger: {allow: {users: [\"My-App[bot]\"]}}\n", 1), "approval"),
			`projects[0].trigger.allow.users[0]: "My-App[bot]" is a GitHub App's bot account`},
		{"gitlab token bot", withGate(strings.Replace(staged, "platform: github", "platform: gitlab", 1),
			`{approval: {approvers: {users: [project_42_bot_3f9a1c]}}}`),
			`projects[0].pipeline.stages[1].gate.approval.approvers.users[0]: "project_42_bot_3f9a1c" is a GitLab access token's bot user`},
	} {
		got := parseErrs(t, tc.doc, map[string]string{"T": "t"})
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("%s: %q, want one error containing %q", tc.name, got, tc.want)
		}
	}
	// A person named like a bot elsewhere, or without a gate, is not refused.
	mustParse(t, withGate(staged, `{approval: {approvers: {users: [dependabot]}}}`), map[string]string{"T": "t"})
	mustParse(t, strings.Replace(staged, "    polling: {enabled: true}\n", "    polling: {enabled: true}\n    trigger: {allow: {users: [\"x[bot]\"]}}\n", 1), map[string]string{"T": "t"})
}
