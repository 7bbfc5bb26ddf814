package config

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// checkJiraLabels refuses labels Jira cannot hold: a Jira label is one word,
// so a trigger label or a lifecycle label (built from the prefix) with a
// space would be rejected by every write and never match a search.
func checkJiraLabels(errs *Errors, path, trigger, labelPrefix string) {
	if strings.ContainsFunc(trigger, unicode.IsSpace) && !errs.has(path+".trigger_label") {
		errs.add(path+".trigger_label", "must not contain spaces: Jira labels cannot")
	}
	if strings.ContainsFunc(labelPrefix, unicode.IsSpace) && !errs.has("label_prefix") {
		errs.add("label_prefix", "must not contain spaces: Jira labels cannot")
	}
}

// checkJiraDeployment defaults the deployment to cloud and requires the
// e-mail that Cloud's basic auth pairs with the API token.
func checkJiraDeployment(errs *Errors, path string, j *Jira) {
	switch j.Deployment {
	case "":
		j.Deployment = "cloud"
	case "cloud", "datacenter":
	default:
		errs.add(path+".jira.deployment", `must be "cloud" or "datacenter"`)
		return
	}
	if j.Deployment == "cloud" && !strings.Contains(j.Email, "@") {
		errs.add(path+".jira.email", "required for Jira Cloud: the e-mail of the API token's account")
	}
}

// checkJiraScope validates jira.jql: instead of repo and repos, a scope
// the Jira tracker accepts (its platform descriptor's CheckScope owns that
// rule).
func checkJiraScope(errs *Errors, path string, p *Project) {
	if p.Jira.JQL == "" {
		return
	}
	jp := path + ".jira.jql"
	if p.Repo != "" || len(p.Repos) > 0 {
		errs.add(jp, "set either repo/repos (project keys) or jira.jql (a scope across projects), not both")
		return
	}
	if d, ok := platforms.Lookup(p.Platform); ok && d.CheckScope != nil {
		if err := d.CheckScope(p.Jira.JQL); err != nil {
			errs.add(jp, err.Error())
		}
	}
}

// checkJiraScopesApart refuses a JQL scope that shares its site with an
// earlier one and either its query or a webhook secret: the receiver tells
// scopes apart by the secret that verifies a delivery, since a Jira payload
// names a project key, not the webhook's filter.
func checkJiraScopesApart(errs *Errors, path string, p *Project, earlier []Project) {
	if !p.capabilities().JiraSection || p.Jira.JQL == "" {
		return
	}
	site := strings.TrimSuffix(strings.ToLower(p.BaseURL), "/")
	for j := range earlier {
		q := &earlier[j]
		if !q.capabilities().JiraSection || q.Jira.JQL == "" || strings.TrimSuffix(strings.ToLower(q.BaseURL), "/") != site {
			continue
		}
		if strings.TrimSpace(q.Jira.JQL) == strings.TrimSpace(p.Jira.JQL) {
			errs.add(path+".jira.jql", fmt.Sprintf("the same scope as project %q on the same site", q.Name))
			continue
		}
		for _, a := range p.Webhook.Secrets {
			for _, b := range q.Webhook.Secrets {
				if a.Value() != "" && a.Value() == b.Value() {
					errs.add(path+".webhook", fmt.Sprintf("shares a secret with the JQL scope of project %q on the same site: give each scope its own Jira webhook and secret, which is how a delivery finds its scope", q.Name))
					return
				}
			}
		}
	}
}
