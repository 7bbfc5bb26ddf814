package config

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// checkAzureDevOpsRepo validates "organization/project" by Azure DevOps'
// naming rules
// (https://learn.microsoft.com/azure/devops/organizations/settings/naming-restrictions):
// an organization is letters, digits and hyphens, starting and ending with a
// letter or digit, at most 50 characters (on Azure DevOps Server it is the
// collection name); a project is at most 64 characters, none of
// \ / : * ? " ' < > | ; # $ { } , + = [ ] %, not starting with "_" or "."
// and not ending with ".".
func checkAzureDevOpsRepo(repo string) error {
	bad := errors.New(`expected "organization/project"`)
	org, project, ok := strings.Cut(repo, "/")
	if !ok || org == "" || project == "" || len(org) > 50 {
		return bad
	}
	for i, r := range org {
		alnum := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		edge := i == 0 || i == len(org)-1
		if !alnum && (edge || r != '-') {
			return errors.New(`expected "organization/project"; the organization may hold letters, digits and inner hyphens only`)
		}
	}
	if utf8.RuneCountInString(project) > 64 || strings.ContainsAny(project, `\/:*?"'<>|;#${},+=[]%`) ||
		strings.HasPrefix(project, "_") || strings.HasPrefix(project, ".") || strings.HasSuffix(project, ".") ||
		strings.TrimSpace(project) != project {
		return errors.New(`expected "organization/project"; the project name breaks Azure DevOps naming rules`)
	}
	return nil
}
