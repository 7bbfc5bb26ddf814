// Package simcases is the table of tracker platforms as the sim serves them,
// shared by everything that runs the daemon against the sim: the offline
// demo, the chaos run and the end-to-end tests. Per platform it says how a
// project on it is configured, how its ticket ids look, and how the sim's
// webhooks reach the receiver, so a new platform or a changed dialect is
// edited here once.
package simcases

import (
	"fmt"

	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Case is one platform.
type Case struct {
	Name string
	// Repo is the project's locator, also the sim's store key.
	Repo string
	// FoldsCase: labels are case-insensitive (GitHub labels, Azure DevOps
	// tags; platforms.SameLabel).
	FoldsCase bool
	// project formats the platform-specific config lines of a project.
	project string
	// idFormat formats a ticket id from the repo and issue number.
	idFormat string
	dialect  string
}

// Project returns the platform-specific lines of a project's YAML config
// (platform, base_url, repo, token, extras), each indented by indent.
func (c Case) Project(simURL, tokenEnv, indent string) string {
	return fmt.Sprintf(c.project, indent, simURL, indent, c.Repo, indent, tokenEnv)
}

// ID is issue n's Ref.ID.
func (c Case) ID(n int) string { return fmt.Sprintf(c.idFormat, c.Repo, n) }

// Hook subscribes baseURL's receiver to the sim's deliveries for Repo.
func (c Case) Hook(baseURL, secret string) trackersim.Hook {
	return trackersim.Hook{Repo: c.Repo, URL: baseURL + "/webhooks/" + c.Name, Secret: secret, Dialect: c.dialect}
}

// Actor is how the platform's webhooks name the sim user login as the
// actor (platforms.WebhookEvent.Actor): the login on GitHub and GitLab,
// the unique name on Azure DevOps, the account id on Jira Cloud.
func (c Case) Actor(login string) string { return trackersim.ActorName(c.dialect, login) }

// WithRepo returns the case bound to another repository of the platform.
func (c Case) WithRepo(repo string) Case { c.Repo = repo; return c }

var (
	GitHub = Case{Name: "github", Repo: "acme/app", idFormat: "%s#%d", dialect: "github", FoldsCase: true,
		project: "platform: github\n%sbase_url: %s/github/\n%srepo: %s\n%stoken: {env: %s}"}
	GitLab = Case{Name: "gitlab", Repo: "acme/sub/app", idFormat: "%s#%d", dialect: "gitlab",
		project: "platform: gitlab\n%sbase_url: %s/gitlab/api/v4/\n%srepo: %s\n%stoken: {env: %s}"}
	AzureDevOps = Case{Name: "azuredevops", Repo: "acmeorg/webapp", idFormat: "%s#%d", dialect: "ado", FoldsCase: true,
		project: "platform: azuredevops\n%sbase_url: %s/ado/\n%srepo: %s\n%stoken: {env: %s}"}
	Jira = Case{Name: "jira", Repo: "APP", idFormat: "%s-%d", dialect: "jira",
		project: "platform: jira\n%sbase_url: %s/jira/\n%srepo: %s\n%stoken: {env: %s}\n%[1]sjira: {email: bot@acme.example}"}
)

// All lists every platform.
var All = []Case{GitHub, GitLab, AzureDevOps, Jira}
