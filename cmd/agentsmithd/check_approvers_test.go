package main

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/trackersim"
)

// gatedPipeline is a project's pipeline YAML (under the project) with a
// gated implement stage whose approvers are users, and secrets.
func gatedPipeline(users, secrets string) string {
	return `    pipeline:
      command: ["true"]
      secrets: [` + secrets + `]
      stages:
        - {name: plan}
        - {name: implement, gate: {approval: {approvers: {users: [` + users + `]}}}}
`
}

// check fails a project whose approvers name the account its token
// authenticates as, with a row naming the account and the field, and one
// whose pipeline gets the daemon's own tracker token or a GitHub token of
// an approver (told by asking GitHub who the token is); a project whose
// approvers are people and whose pipeline has its own token passes both.
func TestCheckSelfApproverAndPipelineSecrets(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo"}})
	w.sim.SetAccess("tok-pipeline-1414", trackersim.Access{Login: "pipeline-bot"})
	t.Setenv("PIPELINE_TOKEN", "tok-pipeline-1414")
	project := func(name, users, secrets string) string {
		p := w.githubProject(name, "acme/app", "CHECK_TOKEN")
		return strings.Replace(p, "    pipeline: {command: [\"true\"]}\n", gatedPipeline(users, secrets), 1)
	}
	code, rep, out := w.run(t,
		project("self", "alice, Agentsmith-Bot", ""),
		project("tokenleak", "alice", "{name: GH_TOKEN, from: {env: CHECK_TOKEN}}"),
		project("approvertoken", "alice", "{name: GITHUB_TOKEN, from: {env: ALICE_TOKEN}}"),
		project("fine", "alice", "{name: GH_TOKEN, from: {env: PIPELINE_TOKEN}}"),
	)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	wantStatuses(t, rep, "self", map[string]string{"auth": "ok", "approvers": "fail"})
	wantStatuses(t, rep, "tokenleak", map[string]string{"approvers": "ok", "pipeline secrets": "fail"})
	wantStatuses(t, rep, "approvertoken", map[string]string{"approvers": "ok", "pipeline secrets": "fail"})
	wantStatuses(t, rep, "fine", map[string]string{"approvers": "ok", "pipeline secrets": "ok"})
	for _, want := range []string{
		"pipeline.stages[1].gate.approval.approvers.users (stage implement) names agentsmith-bot, the account the token authenticates as",
		"pipeline.secrets[GH_TOKEN] is the daemon's own tracker token: a pipeline holding it writes as the daemon",
		"pipeline.secrets[GITHUB_TOKEN] is a token of alice, an approver",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, aliceToken) || strings.Contains(out, "tok-pipeline-1414") {
		t.Errorf("check printed a pipeline secret:\n%s", out)
	}
}
