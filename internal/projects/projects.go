// Package projects turns configured projects into trackers and lifecycle
// projects. The daemon and agentsmithctl both build them here, so the CLI
// talks to a tracker exactly as the daemon does.
package projects

import (
	"cmp"
	"fmt"
	"net/http"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/outage"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
	_ "github.com/agentsmithd/agentsmithd/platforms/all" // registers every platform
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
	d, ok := platforms.Lookup(pc.Platform)
	if !ok || d.New == nil {
		return nil, nil, "", fmt.Errorf("platform %q is not supported", pc.Platform)
	}
	opts := Options(pc)
	opts.Logger, opts.Writer, opts.LabelPrefix, opts.HTTPClient = log.Named(pc.Platform), writer, prefix, hc
	opts.Spellings = append([]string{pc.TriggerLabel}, lifecycleLabels...)
	// This project's stage labels are its own: its tracker reads them so
	// spelled, the shared decoder need not (a stage label starts no run).
	for _, name := range pc.Pipeline.StageNames() {
		opts.Spellings = append(opts.Spellings, lifecycle.Labels{Prefix: prefix}.Stage(name))
	}
	opts.Lifecycle = lifecycleLabels
	opts.Locker = redislock.Locker{RDB: rdb}
	return d.New(opts)
}

// GitHubAPI is how a GitHub project writes its labels: github.api, else
// GraphQL, which spends 1 core call (the claim's read) and 3 GraphQL points
// a webhook → Done ticket where REST spends 7 core calls (bench/results.md
// sections 2 and 8). "" for a platform without the choice.
func GitHubAPI(pc *config.Project) string {
	if d, ok := platforms.Lookup(pc.Platform); !ok || !d.Capabilities.GitHubAPI {
		return ""
	}
	return cmp.Or(pc.GitHub.API, config.GitHubAPIGraphQL)
}

// stageGate is the lifecycle's view of a stage's gate; approvers default
// to the project's trigger.allow (allow).
func stageGate(g *config.Gate, allow lifecycle.TriggerAllow, esc config.Escalate) *lifecycle.Gate {
	if g == nil {
		return nil
	}
	if g.Approval == nil {
		if g.After <= 0 {
			return nil
		}
		return &lifecycle.Gate{After: g.After}
	}
	a := &lifecycle.Approval{Approvers: allow, DistinctFromTrigger: g.Approval.DistinctFromTrigger,
		MaxRejections: g.Approval.MaxRejections, Timeout: g.Approval.Timeout, OnTimeout: g.Approval.OnTimeout,
		EscalateLabel: cmp.Or(g.Approval.Label, esc.Label), Mention: g.Approval.Mention}
	if len(a.Mention) == 0 {
		a.Mention = esc.Mention
	}
	if ap := g.Approval.Approvers; ap != nil {
		a.Approvers = lifecycle.TriggerAllow{Write: ap.Access != config.TriggerAccessNone, Users: ap.Users, Teams: ap.Teams}
	}
	return &lifecycle.Gate{Approval: a}
}

// Options are pc's credentials and scope as its platform's descriptor
// takes them, for its tracker (Tracker adds the rest) and its lister.
func Options(pc *config.Project) platforms.TrackerOptions {
	opts := platforms.TrackerOptions{BaseURL: pc.BaseURL, Repo: pc.Repo, Scope: pc.Jira.JQL, Project: pc.Name,
		Token: pc.Token.Value(), Email: pc.Jira.Email, Deployment: pc.Jira.Deployment,
		Installation: pc.Installation == config.InstallationAll, API: GitHubAPI(pc)}
	if a := pc.GitHubApp; a.IsSet() {
		opts.App = &platforms.AppCredentials{AppID: a.AppID, InstallationID: a.InstallationID, PrivateKey: []byte(a.PrivateKey.Value())}
	}
	return opts
}

// OutageProject is how pc's tracker outage lines (pkg/outage) name it:
// the credential by its setting and source (an environment variable or a
// file), never its value.
func OutageProject(pc *config.Project) outage.Project {
	secret := "projects[" + pc.Name + "].token " + pc.Token.String()
	if a := pc.GitHubApp; a.IsSet() {
		secret = "projects[" + pc.Name + "].github_app.private_key " + a.PrivateKey.String()
	}
	return outage.Project{Name: pc.Name, Platform: pc.Platform, BaseURL: pc.BaseURL, Secret: secret}
}

// RateLimits is how platform's tracker signals rate limits, for an HTTP
// client the caller builds itself (the daemon's instrumented one); a
// platform's own default client already uses it. Unknown platforms get the
// zero policy (GitHub-style X-RateLimit-* headers).
func RateLimits(platform string) trackerhttp.RateLimits {
	d, _ := platforms.Lookup(platform)
	return d.RateLimits
}

// ProjectRateLimits is RateLimits(pc.Platform) with pc's reading of
// GitHub's content creation limit: label writes count toward it when
// github.pace_labels_as_content says so.
func ProjectRateLimits(pc *config.Project) trackerhttp.RateLimits {
	if pc.GitHub.PaceLabelsAsContent {
		return trackerhttp.GitHubRateLimitsLabelsAsContent
	}
	return RateLimits(pc.Platform)
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
		Pool:     pc.PoolName(),
		Limits:   lifecycle.Limits{Concurrency: pl.Concurrency, TokenConcurrency: pc.TokenConcurrency},
		Stuck: lifecycle.StuckThresholds{EnqueuedAfter: pc.Stuck.EnqueuedAfter, InProgressAfter: pc.Stuck.InProgressAfter,
			Comment: pc.Stuck.Comment},
		ProgressComment: pc.Progress == config.ProgressComment,
	}
	if pc.Polling.Enabled {
		p.PollInterval = pc.Polling.Interval
	}
	for _, st := range pl.Stages {
		sb := st.Retry.Backoff
		cred, _ := config.Pipeline{RunAs: st.RunAs}.RunAsCredential() // config.Load refused one that does not resolve
		p.Stages = append(p.Stages, lifecycle.Stage{Name: st.Name, Command: st.Command, Timeout: st.Timeout, MaxAttempts: st.MaxAttempts,
			Retry: lifecycle.RetryPolicy{ExitCodes: st.Retry.ExitCodes, OnTimeout: st.Retry.OnTimeout,
				Backoff: lifecycle.Backoff{Initial: sb.Initial, Max: sb.Max, Multiplier: sb.Multiplier, Jitter: sb.Jitter}},
			RunAs: cred, StartHint: pl.Where(st.Command), Pool: st.Pool, Gate: stageGate(st.Gate, p.TriggerAllow, pl.Escalate),
			Limits: RunLimits(st.Sandbox.Limits)})
		if o := st.OnFailure; o != nil {
			p.Stages[len(p.Stages)-1].OnFailure = lifecycle.SendBack{BackTo: o.BackTo, Max: o.Max}
		}
	}
	// config.Load refused a run_as that does not resolve.
	p.Pipeline.RunAs, _ = pl.RunAsCredential()
	// config.Load checked what gitws.New checks: it cannot fail here.
	p.Workspace, _ = pc.Workspace.Git.Repo(p.Pipeline.RunAs, pc.SecretValues())
	p.Pipeline.Sandbox = lifecycle.SandboxPolicy{Limits: RunLimits(pl.Sandbox.Limits),
		Allow: AllowRules(pl.Sandbox.Network.Allow), Mounts: Mounts(pl.Sandbox.Mounts)}
	if len(pl.Secrets) > 0 {
		p.Pipeline.Secrets = make(map[string]string, len(pl.Secrets))
		for _, s := range pl.Secrets {
			if in := s.Inject; in != nil {
				// The pipeline holds a placeholder; the egress proxy
				// puts the secret on its requests to one host.
				ph := config.InjectPlaceholder(s.Name)
				p.Pipeline.Secrets[s.Name] = ph
				p.Pipeline.Sandbox.Inject = append(p.Pipeline.Sandbox.Inject, lifecycle.Injection{Name: s.Name, Host: in.Host,
					Header: in.Header, Value: s.From.Value(), Placeholder: ph})
				continue
			}
			p.Pipeline.Secrets[s.Name] = s.From.Value()
		}
	}
	p.Redact = redact.New(pc.SecretValues()...)
	if pc.TokenConcurrency > 0 {
		p.Limits.TokenID = lifecycle.TokenID(pc.Token.Value())
	}
	return p
}

// RunLimits is a config's sandbox limits for a run (unset fields stay
// unset; "unlimited" and -1 become lifecycle.Unlimited).
func RunLimits(l config.Limits) lifecycle.RunLimits {
	out := lifecycle.RunLimits{Processes: l.Processes, CPU: l.CPU}
	switch n := l.MemoryBytes(); {
	case n > 0:
		out.MemoryBytes = n
	case l.Memory != "":
		out.MemoryBytes = lifecycle.Unlimited
	}
	return out
}

// AllowRules are a config's network.allow rules.
func AllowRules(rs []config.AllowRule) []lifecycle.AllowRule {
	out := make([]lifecycle.AllowRule, 0, len(rs))
	for _, r := range rs {
		out = append(out, lifecycle.AllowRule{Host: r.Host, Ports: r.Ports, Methods: r.Methods})
	}
	return out
}

// Mounts are a config's sandbox mounts.
func Mounts(ms []config.Mount) []lifecycle.Mount {
	out := make([]lifecycle.Mount, 0, len(ms))
	for _, m := range ms {
		out = append(out, lifecycle.Mount{Path: m.Path, Writable: m.Writable})
	}
	return out
}
