package housekeeping

import (
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// allProjects is every configured project, for lifecycle.ListOpen.
func allProjects(ps lifecycle.Projects) []*lifecycle.Project {
	out := make([]*lifecycle.Project, 0, len(ps))
	for _, p := range ps {
		out = append(out, p)
	}
	return out
}
