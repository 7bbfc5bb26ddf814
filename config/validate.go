package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var (
	projectName = regexp.MustCompile(`^[a-z0-9._-]+$`)
	ghName      = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// validate checks c after defaults, folds shorthand secrets into their
// fields and resolves the secrets of the groups in need (the others keep
// their source and an empty value). It never puts a secret value or a URL
// (which may carry credentials) into a message.
func (c *Config) validate(errs *Errors, lookupEnv func(string) (string, bool), baseDir string, need Secrets) {
	secret := func(group Secrets, s *Secret, path string) {
		if need&group != 0 {
			s.resolve(path, lookupEnv, baseDir, errs)
		}
	}

	c.Redis.validate(errs, baseDir)
	secret(RedisSecrets, &c.Redis.Password, "redis.password")
	secret(RedisSecrets, &c.Redis.SentinelPassword, "redis.sentinel_password")

	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs.add("listen", `expected host:port such as ":8080"`)
	}
	if strings.ContainsFunc(c.LabelPrefix, func(r rune) bool { return r == ':' || unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		errs.add("label_prefix", `must not contain ":", spaces or control characters`)
	}
	if strings.ContainsFunc(c.InstanceID, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		errs.add("instance_id", "must not contain spaces or control characters")
	}
	for i, role := range c.Roles {
		path := fmt.Sprintf("roles[%d]", i)
		switch {
		case !slices.Contains(AllRoles, role):
			errs.add(path, fmt.Sprintf("unknown role %q (want one of %s)", role, strings.Join(AllRoles, ", ")))
		case slices.Index(c.Roles, role) < i:
			errs.add(path, fmt.Sprintf("duplicate role %q", role))
		}
	}

	cs := &c.Consumer
	atLeast(errs, "consumer.concurrency", cs.Concurrency, 1)
	positive(errs, "consumer.heartbeat_ttl", cs.HeartbeatTTL)
	positive(errs, "consumer.heartbeat_renew", cs.HeartbeatRenew)
	if cs.HeartbeatRenew > 0 && cs.HeartbeatTTL > 0 && cs.HeartbeatRenew >= cs.HeartbeatTTL {
		errs.add("consumer.heartbeat_renew", fmt.Sprintf("must be shorter than consumer.heartbeat_ttl (%s)", cs.HeartbeatTTL))
	}
	positive(errs, "consumer.shutdown_grace", cs.ShutdownGrace)
	positive(errs, "consumer.kill_grace", cs.KillGrace)
	atLeast(errs, "consumer.tail_bytes", cs.TailBytes, 1)
	if cs.TailBytes > MaxTailBytes {
		errs.add("consumer.tail_bytes", fmt.Sprintf("must be at most %d (the failure comment must fit the tracker's comment limit)", MaxTailBytes))
	}
	atLeast(errs, "consumer.lower_priority_every", cs.LowerPriorityEvery, 1)
	positive(errs, "consumer.limit_delay", cs.LimitDelay)
	positive(errs, "consumer.guard_check", cs.GuardCheck)
	cs.validatePools(errs)

	positive(errs, "claim_lock_ttl", c.ClaimLockTTL)
	hk := &c.Housekeeping
	positive(errs, "housekeeping.fast_interval", hk.FastInterval)
	positive(errs, "housekeeping.slow_interval", hk.SlowInterval)
	positive(errs, "housekeeping.instance_ttl", hk.InstanceTTL)
	positive(errs, "housekeeping.enqueued_grace", hk.EnqueuedGrace)
	positive(errs, "housekeeping.lease_ttl", hk.LeaseTTL)
	positive(errs, "housekeeping.delayed_interval", hk.DelayedInterval)
	positive(errs, "poller.lease_ttl", c.Poller.LeaseTTL)
	positive(errs, "discovery.interval", c.Discovery.Interval)
	positive(errs, "discovery.signal_check", c.Discovery.SignalCheck)
	if c.Webhook.MaxBodyBytes < 1 {
		errs.add("webhook.max_body_bytes", "must be at least 1")
	}
	positive(errs, "webhook.delivery_ttl", c.Webhook.DeliveryTTL)
	atLeast(errs, "webhook.max_connections", c.Webhook.MaxConnections, 1)
	atLeast(errs, "webhook.max_connections_per_address", c.Webhook.MaxConnectionsPerAddress, 1)
	if c.Webhook.MaxConnections >= 1 && c.Webhook.MaxConnectionsPerAddress > c.Webhook.MaxConnections {
		errs.add("webhook.max_connections_per_address", fmt.Sprintf("must be at most webhook.max_connections (%d)", c.Webhook.MaxConnections))
	}
	positive(errs, "webhook.body_timeout", c.Webhook.BodyTimeout)
	if c.Audit.MaxLen < MinAuditMaxLen {
		errs.add("audit.max_len", fmt.Sprintf("must be at least %d", MinAuditMaxLen))
	}
	st := &c.Status
	oneOf(&st.Token, "status.token", errs, st.Token, st.tokenEnv, st.tokenFile)
	secret(StatusSecrets, &st.Token, "status.token")
	for i, h := range st.Hosts {
		if msg := hostName(h); msg != "" {
			errs.add(fmt.Sprintf("status.hosts[%d]", i), msg)
		}
	}
	c.validateAdminListen(errs)
	c.validateSandbox(errs)

	if len(c.Projects) == 0 {
		errs.add("projects", "at least one project is required")
	}
	for i := range c.Projects {
		p := &c.Projects[i]
		path := fmt.Sprintf("projects[%d]", i)
		p.validate(errs, path, c.LabelPrefix)
		if j := slices.IndexFunc(c.Projects[:i], func(q Project) bool { return q.Name == p.Name }); j >= 0 && p.Name != "" {
			errs.add(path+".name", fmt.Sprintf("duplicate of projects[%d]", j))
		}
		secret(TrackerSecrets, &p.Token, path+".token")
		p.Workspace.Git.validate(errs, path+".workspace.git")
		if p.Workspace.Git.Token.IsSet() {
			secret(PipelineSecrets, &p.Workspace.Git.Token, path+".workspace.git.token")
		}
		if p.GitHubApp.PrivateKey.IsSet() {
			secret(TrackerSecrets, &p.GitHubApp.PrivateKey, path+".github_app.private_key")
			if need&TrackerSecrets != 0 {
				checkRSAKey(errs, path+".github_app.private_key", p.GitHubApp.PrivateKey)
			}
		}
		for k := range p.Webhook.Secrets {
			secret(WebhookSecrets, &p.Webhook.Secrets[k], fmt.Sprintf("%s.webhook.secrets[%d]", path, k))
		}
		checkJiraScopesApart(errs, path, p, c.Projects[:i])
		checkPacingAgrees(errs, path, p, c.Projects[:i])
		validateRunAs(errs, path+".pipeline", p.Pipeline)
		validateSandboxProject(errs, path+".pipeline", p.Pipeline, c.Sandbox.On())
		for k := range p.Pipeline.Secrets {
			ps := &p.Pipeline.Secrets[k]
			sp := fmt.Sprintf("%s.pipeline.secrets[%d]", path, k)
			switch {
			case !envName.MatchString(ps.Name):
				errs.add(sp+".name", "must be an environment variable name such as GH_TOKEN")
			case strings.HasPrefix(ps.Name, "AGENTSMITH_") || p.Pipeline.Env[ps.Name] != "" ||
				slices.IndexFunc(p.Pipeline.Secrets[:k], func(o PipelineSecret) bool { return o.Name == ps.Name }) >= 0:
				errs.add(sp+".name", "duplicate of another pipeline variable (or in AGENTSMITH_*)")
			}
			if !ps.From.IsSet() {
				errs.add(sp+".from", "required: {env: NAME} or {file: PATH}")
				continue
			}
			secret(PipelineSecrets, &ps.From, sp+".from")
		}
	}
}

func (p *Project) validate(errs *Errors, path, labelPrefix string) {
	switch {
	case p.Name == "":
		errs.add(path+".name", "required")
	case !projectName.MatchString(p.Name):
		errs.add(path+".name", `must use only a-z, 0-9, "-", "_" and "."`)
	case strings.Trim(p.Name, ".") == "":
		// The name is a directory under consumer.work_dir: "." and ".."
		// would put working directories outside it.
		errs.add(path+".name", `must not be "." or ".." (it names a directory under consumer.work_dir)`)
	}

	rules, known := platforms.Lookup(p.Platform)
	switch {
	case p.Platform == "":
		errs.add(path+".platform", "required")
	case !known:
		errs.add(path+".platform", fmt.Sprintf("unknown platform %q (known: %s)",
			p.Platform, strings.Join(platforms.Names(), ", ")))
	}
	if known {
		if p.BaseURL == "" {
			errs.add(path+".base_url", "required")
		} else if msg := checkBaseURL(p.BaseURL); msg != "" {
			errs.add(path+".base_url", msg)
		}
		switch p.Progress {
		case "", ProgressOff, ProgressComment:
		default:
			errs.add(path+".progress", fmt.Sprintf("%q is not a progress mode: %q or %q", p.Progress, ProgressComment, ProgressOff))
		}
		p.validateDiscovery(errs, path)
		if p.Reactions && !rules.Reactions {
			errs.add(path+".reactions", "only for platforms with issue reactions (github, gitlab)")
		}
		switch {
		case p.Repo == "" && (p.Discovered() || p.Jira.JQL != ""):
		case p.Repo == "":
			errs.add(path+".repo", "required (or repos, patterns of GitHub repositories)")
		case rules.CheckRepo != nil:
			if err := rules.CheckRepo(p.Repo); err != nil {
				errs.add(path+".repo", err.Error())
			}
		}
	}

	oneOf(&p.Token, path+".token", errs, p.Token, p.tokenEnv, p.tokenFile)
	app := p.GitHubApp.IsSet()
	switch {
	case app && !p.capabilities().GitHubApp:
		errs.add(path+".github_app", "only for platform github")
	case app && p.Token.IsSet():
		errs.add(path+".token", "set either token or github_app, not both")
	case app:
		p.GitHubApp.validate(errs, path+".github_app")
	case !p.Token.IsSet() && !errs.has(path+".token"):
		errs.add(path+".token", "required: {env: NAME} or {file: PATH}, or token_env / token_file")
	}

	switch {
	case strings.TrimSpace(p.TriggerLabel) == "":
		errs.add(path+".trigger_label", "must not be blank")
	case strings.HasPrefix(p.TriggerLabel, labelPrefix+":"):
		// The spec gives the whole "<prefix>:" namespace to the framework,
		// so a trigger there could be removed by the next transition.
		errs.add(path+".trigger_label", fmt.Sprintf("%q is in the lifecycle namespace %s:*", p.TriggerLabel, labelPrefix))
	}
	if c := p.Commands.Prefix; len(c) > maxCommandPrefix || strings.ContainsFunc(c, unicode.IsSpace) || strings.HasPrefix(c, "*") || c == "" {
		// The daemon's own comments open with "**", and a command is
		// "<prefix> <word>" on one line.
		errs.add(path+".commands.prefix", fmt.Sprintf("%q: want 1 to %d characters, no spaces, not starting with *", c, maxCommandPrefix))
	}
	p.Trigger.Allow.validate(errs, path+".trigger.allow", p.Platform, "start a run")
	if d, ok := platforms.Lookup(p.Platform); ok {
		checkLabelLimit(errs, path, d, p, labelPrefix)
	}
	caps := p.capabilities()
	if caps.SpacelessLabels {
		checkJiraLabels(errs, path, p.TriggerLabel, labelPrefix)
	}
	if caps.JiraSection {
		checkJiraDeployment(errs, path, &p.Jira)
		checkJiraScope(errs, path, p)
	} else if p.Jira != (Jira{}) {
		errs.add(path+".jira", "only for platform jira")
	}
	switch {
	case p.GitHub.API == "" && !p.GitHub.Paced() && !p.GitHub.PaceLabelsAsContent:
	case !caps.GitHubAPI:
		errs.add(path+".github", "only for platform github")
	case p.GitHub.API != "" && p.GitHub.API != GitHubAPIREST && p.GitHub.API != GitHubAPIGraphQL:
		errs.add(path+".github.api", fmt.Sprintf("want %q (the default) or %q", GitHubAPIGraphQL, GitHubAPIREST))
	case p.GitHub.PaceLabelsAsContent && !p.GitHub.Paced():
		errs.add(path+".github.pace_labels_as_content", "needs pace_secondary: true (it says how writes are paced)")
	}

	w := &p.Webhook
	var secrets []Secret
	for _, s := range []Secret{w.secretEnv, w.secretFile} {
		if s.IsSet() {
			secrets = append(secrets, s)
		}
	}
	for k, s := range w.Secrets {
		if !s.IsSet() {
			errs.add(fmt.Sprintf("%s.webhook.secrets[%d]", path, k), "expected {env: NAME} or {file: PATH}")
			continue
		}
		secrets = append(secrets, s)
	}
	w.Secrets = secrets

	if p.Stuck.EnqueuedAfter < 0 {
		errs.add(path+".stuck.enqueued_after", "must not be negative")
	}
	if p.Stuck.InProgressAfter < 0 {
		errs.add(path+".stuck.in_progress_after", "must not be negative")
	}
	if p.Polling.Interval < MinPollInterval {
		errs.add(path+".polling.interval", "must be at least "+MinPollInterval.String())
	}
	if len(w.Secrets) == 0 && !p.Polling.Enabled {
		errs.add(path, "nothing triggers this project: set webhook.secret_env (or secrets) or polling.enabled")
	}

	pl := &p.Pipeline
	if len(pl.Command) == 0 {
		errs.add(path+".pipeline.command", "required (an argv list such as [./run.sh, --verbose])")
	} else if pl.Command[0] == "" {
		errs.add(path+".pipeline.command[0]", "must not be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(pl.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			errs.add(path+".pipeline.env", fmt.Sprintf("invalid variable name %q", k))
		} else if strings.Contains(pl.Env[k], "\x00") {
			errs.add(path+".pipeline.env."+k, "must not contain NUL")
		}
	}
	positive(errs, path+".pipeline.timeout", pl.Timeout)
	atLeast(errs, path+".pipeline.max_attempts", pl.MaxAttempts, 1)
	pl.validateOutcomes(errs, path+".pipeline", p.TriggerLabel, labelPrefix, caps.SpacelessLabels)
	pl.validateStages(errs, path+".pipeline")
	pl.validateGates(errs, path+".pipeline", p.Platform, p.TriggerLabel, labelPrefix, caps.SpacelessLabels, p.Trigger.Allow, path+".trigger.allow")
	p.Priority.validate(errs, path+".priority", labelPrefix)
	p.validatePool(errs, path)
	atLeast(errs, path+".token_concurrency", p.TokenConcurrency, 0)
}

// checkBaseURL returns a complaint or "". The URL itself is not repeated:
// it may carry credentials.
func checkBaseURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "must be an absolute http(s) URL"
	case u.User != nil:
		return "must not contain credentials; use token"
	}
	return ""
}

// capabilities are those of p's platform; none for a platform not
// registered.
func (p *Project) capabilities() platforms.Capabilities {
	d, _ := platforms.Lookup(p.Platform)
	return d.Capabilities
}

// validate checks a list of who may act (trigger.allow, a gate's
// approvers) at path for platform; what says what they may do, for the
// message about an empty list.
func (a TriggerAllow) validate(errs *Errors, path, platform, what string) {
	switch {
	case a.Access != TriggerAccessWrite && a.Access != TriggerAccessNone:
		errs.add(path+".access", fmt.Sprintf("%q: want %q or %q", a.Access, TriggerAccessWrite, TriggerAccessNone))
	case a.Access == TriggerAccessNone && len(a.Users) == 0 && len(a.Teams) == 0:
		errs.add(path+".users", "users or teams required when access is \"none\": otherwise nobody may "+what)
	}
	if rules, ok := platforms.Lookup(platform); ok && !rules.Teams && len(a.Teams) > 0 {
		errs.add(path+".teams", fmt.Sprintf("platform %q cannot tell team membership", platform))
	}
	for i, t := range a.Teams {
		if strings.TrimSpace(t) == "" {
			errs.add(fmt.Sprintf("%s.teams[%d]", path, i), "must not be blank")
		}
	}
	for i, u := range a.Users {
		if strings.TrimSpace(u) == "" {
			errs.add(fmt.Sprintf("%s.users[%d]", path, i), "must not be blank")
		}
	}
}

func positive(errs *Errors, path string, d time.Duration) {
	if d <= 0 {
		errs.add(path, "must be positive")
	}
}

func atLeast(errs *Errors, path string, v, minimum int) {
	if v < minimum {
		errs.add(path, fmt.Sprintf("must be at least %d", minimum))
	}
}

// validateAdminListen checks admin_listen once the status token's
// shorthand keys are folded into status.token. The admin listener serves /metrics and the status page (ticket ids, private
// repository names): off loopback it must require the status token.
func (c *Config) validateAdminListen(errs *Errors) {
	host, port, err := net.SplitHostPort(c.AdminListen)
	if err != nil {
		errs.add("admin_listen", `expected host:port such as "127.0.0.1:9090"`)
		return
	}
	if !IsLoopback(host) && !c.Status.Token.IsSet() {
		errs.add("admin_listen", fmt.Sprintf("%s is not a loopback address: set status.token (token_env or token_file), "+
			"which /metrics and /status then require as a bearer token", c.AdminListen))
	}
	if lhost, lport, err := net.SplitHostPort(c.Listen); err == nil && lport == port && port != "0" &&
		(lhost == host || unspecified(lhost) || unspecified(host)) {
		errs.add("admin_listen", "must not share a port with listen: the webhook listener serves only the webhooks and probes")
	}
}

// IsLoopback reports whether a listener on host is reachable only from
// this machine: "localhost" or a loopback IP. An empty host listens on
// every interface.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostName says what is wrong with a status.hosts entry, "" when nothing:
// it must be a DNS name alone (no scheme, port, path or wildcard), since it
// is compared with the Host header's name whatever the port.
func hostName(h string) string {
	switch {
	case net.ParseIP(strings.Trim(h, "[]")) != nil:
		return "an IP is always allowed; list names only"
	case h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, ".."):
		return `expected a host name such as "agentsmithd.internal"`
	case strings.ContainsFunc(h, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.')
	}):
		return `expected a host name such as "agentsmithd.internal", without scheme, port, path or wildcard`
	}
	return ""
}

func unspecified(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// maxCommandPrefix bounds projects[].commands.prefix.
const maxCommandPrefix = 40

// checkPacingAgrees refuses a GitHub project that shares a credential with
// an earlier one (the same host and the same token, by source or value, or
// the same App installation) but not its pacing: github.pace_secondary and
// github.pace_labels_as_content are per project, while the budget they
// pace is the token's (trackerhttp keys it by host and credential, and
// GitHub counts an installation's requests together), so a project that
// does not count what the other does leaves the other under-counting.
func checkPacingAgrees(errs *Errors, path string, p *Project, earlier []Project) {
	if !p.capabilities().GitHubAPI {
		return
	}
	for j := range earlier {
		q := &earlier[j]
		if !q.capabilities().GitHubAPI || !sameCredential(p, q) {
			continue
		}
		switch {
		case p.GitHub.Paced() != q.GitHub.Paced():
			errs.add(path+".github.pace_secondary", fmt.Sprintf("%v, but project %q, which shares this project's credential, says %v: the pace counts the credential's writes, so both must say the same",
				p.GitHub.Paced(), q.Name, q.GitHub.Paced()))
		case p.GitHub.PaceLabelsAsContent != q.GitHub.PaceLabelsAsContent:
			errs.add(path+".github.pace_labels_as_content", fmt.Sprintf("%v, but project %q, which shares this project's credential, says %v: the pace counts the credential's writes, so both must say the same",
				p.GitHub.PaceLabelsAsContent, q.Name, q.GitHub.PaceLabelsAsContent))
		default:
			continue
		}
		return
	}
}

// sameCredential reports whether p and q reach the same host as the same
// caller: the same App installation, or the same token source (env or
// file) or resolved value.
func sameCredential(p, q *Project) bool {
	if hostOf(p.BaseURL) != hostOf(q.BaseURL) {
		return false
	}
	if p.GitHubApp.IsSet() || q.GitHubApp.IsSet() {
		return p.GitHubApp.AppID == q.GitHubApp.AppID && p.GitHubApp.InstallationID == q.GitHubApp.InstallationID
	}
	a, b := p.Token, q.Token
	return (a.Env != "" && a.Env == b.Env) || (a.File != "" && a.File == b.File) || (a.Value() != "" && a.Value() == b.Value())
}

// hostOf is the host of a base URL, as the shared budget keys it; the
// string itself when it does not parse.
func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return strings.ToLower(u.Host)
	}
	return strings.ToLower(base)
}
