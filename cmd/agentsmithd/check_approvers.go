package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// approverList is one gate's approvers as the daemon reads them: the
// gate's own list, or trigger.allow's when it names none.
type approverList struct {
	stage string
	path  string // the config field that lists them
	users []string
}

// approverLists are pc's approval gates' approver lists.
func approverLists(pc *config.Project) []approverList {
	var out []approverList
	for i, s := range pc.Pipeline.Stages {
		if s.Gate == nil || s.Gate.Approval == nil {
			continue
		}
		if a := s.Gate.Approval.Approvers; a != nil {
			out = append(out, approverList{s.Name, fmt.Sprintf("pipeline.stages[%d].gate.approval.approvers.users", i), a.Users})
		} else {
			out = append(out, approverList{s.Name, "trigger.allow.users", pc.Trigger.Allow.Users})
		}
	}
	return out
}

// listing reports where lists name who (compared as the gate compares
// actors, ignoring case).
func listing(lists []approverList, who string) []string {
	var where []string
	for _, l := range lists {
		if slices.ContainsFunc(l.users, func(u string) bool { return strings.EqualFold(strings.TrimSpace(u), who) }) {
			where = append(where, fmt.Sprintf("%s (stage %s)", l.path, l.stage))
		}
	}
	return where
}

// checkSelfApprover fails when an approver list names the account the
// project's token authenticates as: the gate refuses that account's
// decisions at run time, so the listing is a mistake that leaves the gate
// to fewer people than the config says, and whoever holds the token (a
// pipeline given it) is what the listing meant to trust. No row for a
// project without an approval gate, or a tracker that cannot tell who its
// token is (a GitHub App installation: validate refuses [bot] approvers).
func checkSelfApprover(ctx context.Context, pc *config.Project, tr platforms.Tracker) (platforms.CheckResult, bool) {
	const name = "approvers"
	lists := approverLists(pc)
	si, ok := tr.(platforms.SelfIdentifier)
	if len(lists) == 0 || !ok {
		return platforms.CheckResult{}, false
	}
	self, err := si.Self(ctx)
	switch {
	case err != nil:
		return platforms.Warn(name, "who the token is could not be read: "+err.Error(), "see the auth row"), true
	case self == "":
		return platforms.CheckResult{}, false
	}
	if where := listing(lists, self); len(where) > 0 {
		return platforms.Fail(name, fmt.Sprintf("%s names %s, the account the token authenticates as (the daemon's own): its decisions are refused, "+
			"and a pipeline holding its token could otherwise approve its own work", strings.Join(where, ", "), self),
			"remove "+self+" from the approvers and list people who review the plans"), true
	}
	return platforms.OK(name, "no approver list names %s, the daemon's own account (its decisions are refused)", self), true
}

// checkPipelineSecrets fails when a pipeline.secrets entry hands the
// pipeline, untrusted code, the daemon's own tracker token (any
// project's), or, on GitHub, the token of one of the project's approvers:
// with it the pipeline writes as the daemon, or approves its own work. An
// approver's token is told by asking the tracker who it is (GitHub: GET
// /user), done only for secrets under a name the platform's CLIs read a
// token from (Descriptor.TokenVars; GitHub's alone has them), so no other
// credential is sent to the tracker; elsewhere it cannot be told. No row
// without pipeline.secrets.
func checkPipelineSecrets(ctx context.Context, cfg *config.Config, pc *config.Project) (platforms.CheckResult, bool) {
	const name = "pipeline secrets"
	if len(pc.Pipeline.Secrets) == 0 {
		return platforms.CheckResult{}, false
	}
	var fails []string
	for _, s := range pc.Pipeline.Secrets {
		v := s.From.Value()
		if v == "" {
			continue
		}
		if slices.ContainsFunc(cfg.Projects, func(p config.Project) bool { return p.Token.Value() == v }) {
			fails = append(fails, fmt.Sprintf("pipeline.secrets[%s] is the daemon's own tracker token: a pipeline holding it writes as the daemon", s.Name))
			continue
		}
		if d, ok := platforms.Lookup(pc.Platform); !ok || !slices.Contains(d.TokenVars, s.Name) {
			continue
		}
		who, err := tokenUser(ctx, pc, v)
		if err != nil || who == "" {
			continue // not a token of this GitHub: nothing to compare
		}
		if where := listing(approverLists(pc), who); len(where) > 0 {
			fails = append(fails, fmt.Sprintf("pipeline.secrets[%s] is a token of %s, an approver (%s): a pipeline holding it could approve its own work",
				s.Name, who, strings.Join(where, ", ")))
		}
	}
	if len(fails) > 0 {
		return platforms.Fail(name, strings.Join(fails, "; "),
			"give the pipeline a token of its own account, one that is not an approver, with only the repository access the agent needs"), true
	}
	return platforms.OK(name, "%d secrets; none is the daemon's tracker token", len(pc.Pipeline.Secrets)), true
}

// tokenUser is who token authenticates as on pc's tracker: pc's tracker
// built with token in place of its credential, asked Self.
func tokenUser(ctx context.Context, pc *config.Project, token string) (string, error) {
	as := *pc
	as.Token, as.GitHubApp = config.NewSecret("", "", token), config.GitHubApp{}
	tr, _, _, err := projects.Tracker(&as, nil, nil, "", "", nil)
	if err != nil {
		return "", err
	}
	si, ok := tr.(platforms.SelfIdentifier)
	if !ok {
		return "", nil
	}
	return si.Self(ctx)
}
