package config

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
)

// jiraKey is a Jira project key: Jira's default pattern is an uppercase
// letter followed by uppercase letters, digits or "_"; administrators may
// widen it, so case is not enforced.
var jiraKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// checkJiraProjectKey validates a Jira project's repo: its key ("PROJ").
func checkJiraProjectKey(repo string) error {
	if !jiraKey.MatchString(repo) {
		return errors.New(`expected a Jira project key such as "PROJ"`)
	}
	return nil
}

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
