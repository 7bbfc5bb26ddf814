// Package all links every platform package into a program, so each
// registers its platforms.Descriptor. A program (or a test) that validates
// configs or builds trackers imports it for its side effect; one that
// forgot would refuse every platform as unknown.
package all

import (
	// Each registers its Descriptor in its descriptor.go.
	_ "github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	_ "github.com/agentsmithd/agentsmithd/platforms/github"
	_ "github.com/agentsmithd/agentsmithd/platforms/gitlab"
	_ "github.com/agentsmithd/agentsmithd/platforms/jira"
)
