package projects

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// Each platform's descriptor builds its own tracker, decoder and locator,
// and carries its own rate-limit policy: the facts the per-platform
// switches held, now asked of the registry.
func TestTrackerAsksThePlatformsDescriptor(t *testing.T) {
	for _, c := range []struct {
		platform, repo, locator string
		decoder                 platforms.WebhookDecoder
		limits                  trackerhttp.RateLimits
	}{
		{"github", "acme/app", "acme/app", github.Webhooks{}, trackerhttp.GitHubRateLimits},
		{"gitlab", "group/app", "group/app", gitlab.Webhooks{}, trackerhttp.GitLabRateLimits},
		{"azuredevops", "acme/web", "acme/web", azuredevops.Webhooks{}, trackerhttp.AzureDevOpsRateLimits},
		{"jira", "PROJ", "PROJ", jira.Webhooks{}, trackerhttp.JiraRateLimits},
	} {
		pc := &config.Project{Name: "p", Platform: c.platform, BaseURL: "http://127.0.0.1:1/", Repo: c.repo,
			Jira: config.Jira{Email: "a@b.c"}}
		tr, dec, locator, err := Tracker(pc, nil, nil, "", "agent-smith", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.platform, err)
		}
		if locator != c.locator {
			t.Errorf("%s: locator %q, want %q", c.platform, locator, c.locator)
		}
		if reflect.TypeOf(dec) != reflect.TypeOf(c.decoder) {
			t.Errorf("%s: decoder %T, want %T", c.platform, dec, c.decoder)
		}
		if _, ok := tr.(platforms.Checker); !ok {
			t.Errorf("%s: tracker %T has no pre-flight check", c.platform, tr)
		}
		// %+v prints the policy's func fields as their addresses, which
		// reflect.DeepEqual cannot compare.
		if got := RateLimits(c.platform); fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.limits) {
			t.Errorf("%s: rate limits %+v, want %+v", c.platform, got, c.limits)
		}
	}
	if got, want := platforms.Names(), []string{"azuredevops", "github", "gitlab", "jira"}; !reflect.DeepEqual(got, want) {
		t.Errorf("registered platforms %q, want %q", got, want)
	}
}

func TestTrackerRefusesAnUnknownPlatform(t *testing.T) {
	_, _, _, err := Tracker(&config.Project{Name: "p", Platform: "bugzilla"}, nil, nil, "", "", nil)
	if err == nil || err.Error() != `platform "bugzilla" is not supported` {
		t.Errorf("err = %v", err)
	}
	if got := RateLimits("bugzilla"); !reflect.DeepEqual(got, trackerhttp.RateLimits{}) {
		t.Errorf("unknown platform's rate limits %+v, want the zero policy", got)
	}
}

// The GitHub App's credentials reach the descriptor only when configured.
func TestOptionsCarryTheAppOnlyWhenSet(t *testing.T) {
	pc := &config.Project{Name: "p", Platform: "github", Repo: "a/b", Installation: config.InstallationAll}
	if o := Options(pc); o.App != nil || !o.Installation || o.Repo != "a/b" || o.Project != "p" {
		t.Errorf("without an App: %+v", o)
	}
	pc.GitHubApp = config.GitHubApp{AppID: 1, InstallationID: 2}
	pc.GitHubApp.PrivateKey = config.NewSecret("APP_KEY", "", "-----BEGIN RSA PRIVATE KEY-----")
	o := Options(pc)
	if o.App == nil || o.App.AppID != 1 || o.App.InstallationID != 2 || !strings.HasPrefix(string(o.App.PrivateKey), "-----BEGIN") {
		t.Errorf("with an App: %+v", o.App)
	}
}
