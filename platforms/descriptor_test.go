package platforms_test

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// The four platforms' defaults and capabilities, as config, discovery and
// the receiver's routes decide on them.
func TestTheFourPlatformsDescriptors(t *testing.T) {
	for name, want := range map[string]struct {
		baseURL string
		caps    platforms.Capabilities
	}{
		"github":      {"https://api.github.com/", platforms.Capabilities{Reactions: true, Teams: true, FoldLocator: true, GitHubApp: true, GitHubAPI: true}},
		"gitlab":      {"https://gitlab.com/api/v4/", platforms.Capabilities{Reactions: true, Teams: true, FoldLocator: true, Groups: true}},
		"azuredevops": {"https://dev.azure.com/", platforms.Capabilities{Teams: true}},
		"jira":        {"", platforms.Capabilities{Teams: true, OwnerlessPatterns: true, SpacelessLabels: true, JiraSection: true}},
	} {
		d, ok := platforms.Lookup(name)
		if !ok {
			t.Errorf("%s: not registered", name)
			continue
		}
		if d.Name != name || d.DefaultBaseURL != want.baseURL || d.Capabilities != want.caps {
			t.Errorf("%s: name %q, base URL %q, %+v; want %q, %+v", name, d.Name, d.DefaultBaseURL, d.Capabilities, want.baseURL, want.caps)
		}
		if d.New == nil || d.List == nil || d.CheckRepo == nil || d.RateLimits.Name != name {
			t.Errorf("%s: constructor, lister, repo rule or rate-limit policy missing", name)
		}
		if (d.CheckScope != nil) != (name == "jira") {
			t.Errorf("%s: scope rule %v, want one on jira only", name, d.CheckScope != nil)
		}
	}
}

// A second registration of one name would let the later package silently
// replace the earlier's facts.
func TestRegisterRefusesADuplicate(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("second github registered")
		}
	}()
	platforms.Register(platforms.Descriptor{Name: "github"})
}
