package config

import (
	"errors"
	"strings"
)

// checkGitLabProject validates a GitLab project path: "group/project" or
// "group/subgroup/…/project", every segment non-empty, without spaces at its
// ends, "#", "?" or "%" (the path is used verbatim and URL-encoded by the
// client; a numeric project id is not accepted, as webhooks carry the path).
func checkGitLabProject(repo string) error {
	parts := strings.Split(repo, "/")
	if len(parts) < 2 {
		return errors.New(`expected "group/project" or "group/subgroup/project"`)
	}
	for _, p := range parts {
		if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, "#?%") {
			return errors.New(`expected "group/project" or "group/subgroup/project"`)
		}
	}
	return nil
}
