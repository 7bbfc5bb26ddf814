// Package projects turns configured projects into trackers and lifecycle
// projects. The daemon and agentsmithctl both build them here, so the CLI
// talks to a tracker exactly as the daemon does.
package projects

import (
	"fmt"
	"net/http"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// Tracker builds the tracker of one configured project with the platform's
// webhook decoder and the project's locator on the platform (what webhook
// payloads name it by). It makes no network call. log may be nil.
// hc, when not nil, is the HTTP client every tracker request goes through
// (the daemon's instrumented one); nil builds the platform's default.
// writer tags the default client's writes for trackersim's write log; ""
// for a real tracker (config.Config.TrackerWriter decides).
func Tracker(pc *config.Project, rdb redis.UniversalClient, hc *http.Client, writer, prefix string, log *zap.Logger) (platforms.Tracker, platforms.WebhookDecoder, string, error) {
	if log == nil {
		log = zap.NewNop()
	}
	// The labels the daemon writes and reads, as configured: a tracker on a
	// platform whose label names ignore case reads them so spelled
	// (platforms.Respell). A webhook decoder serves every project of its
	// platform, so it respells the lifecycle labels (one prefix for all)
	// and not this project's trigger label.
	var lifecycleLabels []string
	for _, s := range lifecycle.AllStates {
		lifecycleLabels = append(lifecycleLabels, lifecycle.Labels{Prefix: prefix}.Label(s))
	}
	spellings := append([]string{pc.TriggerLabel}, lifecycleLabels...)
	switch pc.Platform {
	case github.Platform:
		opts := github.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name, Spellings: spellings,
			Token: pc.Token.Value(), Logger: log.Named("github"), Writer: writer, LabelPrefix: prefix, HTTPClient: hc}
		if a := pc.GitHubApp; a.IsSet() {
			opts.App = &github.App{AppID: a.AppID, InstallationID: a.InstallationID, PrivateKey: []byte(a.PrivateKey.Value())}
		}
		tr, err := github.New(opts)
		if err != nil {
			return nil, nil, "", err
		}
		return tr, github.Webhooks{Spellings: lifecycleLabels}, tr.Locator(), nil
	case gitlab.Platform:
		tr, err := gitlab.New(gitlab.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name,
			Token: pc.Token.Value(), Logger: log.Named("gitlab"), Writer: writer, LabelPrefix: prefix, HTTPClient: hc})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, gitlab.Webhooks{}, tr.Locator(), nil
	case azuredevops.Platform:
		tr, err := azuredevops.New(azuredevops.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, Project: pc.Name,
			Token: pc.Token.Value(), Logger: log.Named("azuredevops"), Writer: writer, HTTPClient: hc, Spellings: spellings})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, azuredevops.Webhooks{Spellings: lifecycleLabels}, tr.Locator(), nil
	case jira.Platform:
		tr, err := jira.New(jira.Options{BaseURL: pc.BaseURL, Repo: pc.Repo, JQL: pc.Jira.JQL, Project: pc.Name, Token: pc.Token.Value(),
			Email: pc.Jira.Email, Deployment: pc.Jira.Deployment, Logger: log.Named("jira"), Writer: writer,
			Locker: redislock.Locker{RDB: rdb}, HTTPClient: hc})
		if err != nil {
			return nil, nil, "", err
		}
		return tr, jira.Webhooks{}, tr.Locator(), nil
	}
	return nil, nil, "", fmt.Errorf("platform %q is not supported", pc.Platform)
}

// RateLimits is how platform's tracker signals rate limits, for an HTTP
// client the caller builds itself (the daemon's instrumented one); a
// platform's own default client already uses it. Unknown platforms get the
// zero policy (GitHub-style X-RateLimit-* headers).
func RateLimits(platform string) trackerhttp.RateLimits {
	switch platform {
	case github.Platform:
		return trackerhttp.GitHubRateLimits
	case gitlab.Platform:
		return trackerhttp.GitLabRateLimits
	case azuredevops.Platform:
		return trackerhttp.AzureDevOpsRateLimits
	case jira.Platform:
		return trackerhttp.JiraRateLimits
	}
	return trackerhttp.RateLimits{}
}

// AnyPolls reports whether any of pcs, as configured (a discovered block
// before expansion included), polls: a replica whose discovered block
// matched nothing yet still contends for the poller's lease, so the
// repositories it finds later are polled.
func AnyPolls(pcs []config.Project) bool {
	for i := range pcs {
		if pcs[i].Polling.Enabled {
			return true
		}
	}
	return false
}

// Lifecycle is the lifecycle's view of pc, served by tr.
func Lifecycle(pc *config.Project, tr platforms.Tracker) *lifecycle.Project {
	pl := pc.Pipeline
	b := pl.Retry.Backoff
	p := &lifecycle.Project{
		Name: pc.Name, Platform: pc.Platform, Tracker: tr, TriggerLabel: pc.TriggerLabel, React: pc.Reactions,
		RequireNoOpenBlockers: pc.Readiness.RequireNoOpenBlockers,
		Commands:              lifecycle.Commands{Enabled: pc.Commands.On(), Prefix: pc.Commands.Prefix},
		TriggerAllow: lifecycle.TriggerAllow{Write: pc.Trigger.Allow.Access != config.TriggerAccessNone,
			Users: pc.Trigger.Allow.Users, Teams: pc.Trigger.Allow.Teams},
		Pipeline: lifecycle.Pipeline{Command: pl.Command, Env: pl.Env, Timeout: pl.Timeout, MaxAttempts: pl.MaxAttempts,
			Retry: lifecycle.RetryPolicy{ExitCodes: pl.Retry.ExitCodes, OnTimeout: pl.Retry.OnTimeout,
				Backoff: lifecycle.Backoff{Initial: b.Initial, Max: b.Max, Multiplier: b.Multiplier, Jitter: b.Jitter}},
			Escalate:       lifecycle.EscalatePolicy{ExitCodes: pl.Escalate.ExitCodes, Label: pl.Escalate.Label, Mention: pl.Escalate.Mention},
			PersistCommand: pl.PersistCommand, PersistTimeout: pl.PersistTimeout, StartHint: pl.Where(pl.Command),
		},
		Priority: lifecycle.PriorityPolicy{Labels: pc.Priority.Labels, Default: pc.Priority.Default},
		Limits:   lifecycle.Limits{Concurrency: pl.Concurrency, TokenConcurrency: pc.TokenConcurrency},
		Stuck: lifecycle.StuckThresholds{EnqueuedAfter: pc.Stuck.EnqueuedAfter, InProgressAfter: pc.Stuck.InProgressAfter,
			Comment: pc.Stuck.Comment},
		ProgressComment: pc.Progress == config.ProgressComment,
	}
	if pc.Polling.Enabled {
		p.PollInterval = pc.Polling.Interval
	}
	// config.Load refused a run_as that does not resolve.
	p.Pipeline.RunAs, _ = pl.RunAsCredential()
	// config.Load checked what gitws.New checks: it cannot fail here.
	p.Workspace, _ = pc.Workspace.Git.Repo(p.Pipeline.RunAs)
	if len(pl.Secrets) > 0 {
		p.Pipeline.Secrets = make(map[string]string, len(pl.Secrets))
		for _, s := range pl.Secrets {
			p.Pipeline.Secrets[s.Name] = s.From.Value()
		}
	}
	p.Redact = redact.New(pc.SecretValues()...)
	if pc.TokenConcurrency > 0 {
		p.Limits.TokenID = lifecycle.TokenID(pc.Token.Value())
	}
	return p
}
