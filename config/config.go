// Package config loads the daemon's YAML configuration: Redis, the HTTP
// listener, the label prefix, the roles this replica runs, the service
// timings, and one entry per tracker project. Parse applies the
// specification's defaults, resolves secrets from the environment or files,
// and reports every problem at once, each naming its field by its YAML path
// ("projects[1].webhook.secret_env"), so an operator fixes a config in one
// pass. Secret values never appear in errors or in printed configs.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/lease"
	"github.com/agentsmithd/agentsmithd/pkg/presence"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Roles a replica can run; a fleet scales receivers and consumers apart.
const (
	RoleReceiver     = "receiver"
	RolePoller       = keys.LeaderPoller
	RoleConsumer     = "consumer"
	RoleHousekeeping = keys.LeaderHousekeeping
)

// AllRoles is the default: one process does everything.
var AllRoles = []string{RoleReceiver, RolePoller, RoleConsumer, RoleHousekeeping}

// Defaults for zero-valued fields. Each is defined once: where a service
// falls back to a default itself (its constructor fills a zero Config field),
// the constant here refers to that service's named default, so the config
// and a service built without it cannot drift apart; only settings no
// service defaults (listeners, connection caps, retry policy, polling) are
// defined here. The TTLs are the specification's so an existing deployment
// keeps its timing. TestEmptyConfigPrintsTheServicesDefaults checks the map.
const (
	DefaultListen = ":8080"
	// DefaultAdminListen keeps /metrics and the status page on loopback:
	// the internet reaches only the webhooks on Listen.
	DefaultAdminListen    = "127.0.0.1:9090"
	DefaultLabelPrefix    = lifecycle.DefaultLabelPrefix
	DefaultConcurrency    = consumer.DefaultConcurrency
	DefaultHeartbeatTTL   = keys.HeartbeatTTL   // spec: absence after 2 min means dead
	DefaultHeartbeatRenew = keys.HeartbeatRenew // spec: renewed every 30 s
	DefaultShutdownGrace  = consumer.DefaultShutdownGrace
	DefaultKillGrace      = consumer.DefaultKillGrace
	DefaultTailBytes      = consumer.DefaultTailBytes
	// MaxTailBytes bounds consumer.tail_bytes: the tail goes into the
	// failure comment, which must fit every platform's limit (32,767
	// characters on Jira); the comment is cut to fit anyway, but a larger
	// tail only costs memory per running pipeline.
	MaxTailBytes         = 32768
	DefaultClaimLockTTL  = keys.ClaimLockTTL // spec: claim-lock TTL 30 s
	DefaultFastInterval  = housekeeping.DefaultFastInterval
	DefaultSlowInterval  = housekeeping.DefaultSlowInterval
	DefaultInstanceTTL   = presence.DefaultTTL
	DefaultEnqueuedGrace = housekeeping.DefaultEnqueuedGrace
	DefaultLeaseTTL      = lease.DefaultTTL // housekeeping.lease_ttl and poller.lease_ttl
	DefaultMaxBodyBytes  = receiver.DefaultMaxBody
	DefaultDeliveryTTL   = keys.DeliveryTTL
	// DefaultMaxConnections and DefaultMaxConnectionsPerAddress cap the
	// webhook listener's open connections: trackers send a delivery at a
	// time per hook, so 64 from one address is generous, and 1024 in all
	// stays well below the usual 65,536 file descriptors (or even 4,096)
	// with room for Redis, tracker calls and pipelines.
	DefaultMaxConnections           = 1024
	DefaultMaxConnectionsPerAddress = 64
	// DefaultBodyTimeout is how long a webhook body may take to arrive
	// once its headers have: deliveries are at most a few hundred KB.
	DefaultBodyTimeout     = 10 * time.Second
	DefaultTriggerLabel    = "agent-smith"
	DefaultPollInterval    = poller.DefaultPollInterval
	MinPollInterval        = time.Second
	DefaultPipelineTimeout = 30 * time.Minute
	DefaultMaxAttempts     = 3
	DefaultAuditMaxLen     = audit.DefaultMaxLen
	MinAuditMaxLen         = 100 // below one stream node, MAXLEN ~ cannot trim
	DefaultPersistTimeout  = consumer.DefaultPersistTimeout
	DefaultPriority        = lifecycle.DefaultPriority // the level of agentsmith:queue:jobs
	DefaultPool            = lifecycle.DefaultPool     // the pool of agentsmith:queue:jobs
	DefaultLowerEvery      = queue.DefaultLowerEvery
	DefaultLimitDelay      = consumer.DefaultLimitDelay
	DefaultDelayedInterval = housekeeping.DefaultDelayedInterval
	DefaultBackoffInitial  = 30 * time.Second
	DefaultBackoffMax      = 10 * time.Minute
	DefaultBackoffFactor   = 2.0
	DefaultCancelCheck     = consumer.DefaultCancelCheck
	DefaultGuardCheck      = runguard.DefaultCheck
	DefaultStuckEnqueued   = lifecycle.DefaultStuckEnqueued
	DefaultStuckInProgress = lifecycle.DefaultStuckInProgress
)

// Config is the whole daemon configuration. Zero values mean "default".
type Config struct {
	Redis        Redis         `yaml:"redis"`
	Listen       string        `yaml:"listen"`
	AdminListen  string        `yaml:"admin_listen"`
	LabelPrefix  string        `yaml:"label_prefix"`
	InstanceID   string        `yaml:"instance_id"`
	Roles        []string      `yaml:"roles"`
	Consumer     Consumer      `yaml:"consumer"`
	ClaimLockTTL time.Duration `yaml:"claim_lock_ttl"`
	Housekeeping Housekeeping  `yaml:"housekeeping"`
	Poller       Poller        `yaml:"poller"`
	Discovery    Discovery     `yaml:"discovery"`
	Webhook      Webhook       `yaml:"webhook"`
	Audit        Audit         `yaml:"audit"`
	Status       Status        `yaml:"status"`
	Projects     []Project     `yaml:"projects"`
	// Sandbox shuts each pipeline run in (sandbox.go).
	Sandbox Sandbox `yaml:"sandbox"`
	// TrackersimWriterHeader tags every tracker write with the writer's
	// name (trackerhttp.WriterHeader) for trackersim's write log, which
	// the demo shows and the chaos run's stale-write analysis reads. For
	// trackersim only: a real tracker has no use for the header, so it is
	// off unless a config asks for it.
	TrackersimWriterHeader bool `yaml:"trackersim_writer_header"`
}

// Audit configures the audit stream (keys.Audit()): every transition,
// claim outcome and repair, capped at about MaxLen entries.
type Audit struct {
	// Enabled defaults to true; false stops this replica appending.
	Enabled *bool `yaml:"enabled"`
	MaxLen  int64 `yaml:"max_len"`
}

// On reports whether the replica appends to the audit stream.
func (a Audit) On() bool { return a.Enabled == nil || *a.Enabled }

// Status protects the admin listener (/metrics, the status page, the
// probes there): every request needs "Authorization: Bearer <token>",
// which is how Prometheus scrapes, or a status page login with the token
// (shorthand keys token_env / token_file). With no token configured,
// `serve` creates one in a file beside the config (internal/statustoken);
// validate allows that only on loopback, since other replicas and
// Prometheus could not know it.
type Status struct {
	Token Secret `yaml:"token"`
	// Hosts are the names, besides "localhost" and any IP, that requests
	// to the admin listener may carry in their Host header (a reverse
	// proxy's name, a compose service name). Any other name is refused
	// (421) before anything else: it is what DNS rebinding sends.
	Hosts []string `yaml:"hosts"`

	tokenEnv, tokenFile Secret
}

// Redis says where the shared state lives and how to reach it (see
// redis.go for the modes). An empty address list starts an embedded
// in-process Redis, fit only for single-replica demos.
type Redis struct {
	// Mode is standalone (default), sentinel or cluster.
	Mode string `yaml:"mode"`
	// Addr is one address, kept for configs written before Addrs; Parse
	// copies it into Addrs. Set only one of the two.
	Addr string `yaml:"addr"`
	// Addrs are the server (standalone), the sentinels (sentinel) or seed
	// nodes (cluster), each host:port.
	Addrs []string `yaml:"addrs"`
	// MasterName is the sentinel-monitored master (sentinel mode only).
	MasterName string `yaml:"master_name"`
	// Username is the ACL user; empty means "default".
	Username string `yaml:"username"`
	// Password is optional; shorthand keys password_env / password_file.
	Password Secret `yaml:"password"`
	// SentinelPassword authenticates to the sentinels themselves (their
	// requirepass), which may differ from the data nodes'; shorthand keys
	// sentinel_password_env / sentinel_password_file.
	SentinelPassword Secret `yaml:"sentinel_password"`
	// DB is the database number; cluster mode has only 0.
	DB  int      `yaml:"db"`
	TLS RedisTLS `yaml:"tls"`

	passwordEnv, passwordFile                 Secret
	sentinelPasswordEnv, sentinelPasswordFile Secret
}

// RedisTLS turns on TLS to every Redis node (and sentinel). Relative file
// paths are taken relative to the config file.
type RedisTLS struct {
	Enabled bool `yaml:"enabled"`
	// CAFile verifies the servers; empty means the system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate, for servers with
	// tls-auth-clients yes; set both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked against the certificates
	// (default: each node's host).
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any server certificate: tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Consumer tunes pipeline execution on this replica.
type Consumer struct {
	Concurrency    int           `yaml:"concurrency"`
	HeartbeatTTL   time.Duration `yaml:"heartbeat_ttl"`
	HeartbeatRenew time.Duration `yaml:"heartbeat_renew"` // must be < HeartbeatTTL
	ShutdownGrace  time.Duration `yaml:"shutdown_grace"`  // wait for running pipelines on shutdown
	KillGrace      time.Duration `yaml:"kill_grace"`      // SIGTERM → SIGKILL
	WorkDir        string        `yaml:"work_dir"`        // default lifecycle.DefaultWorkRoot
	TailBytes      int           `yaml:"tail_bytes"`      // output kept for the failure comment
	// LowerPriorityEvery: every N-th take serves a lower priority level
	// first, so a flood of urgent tickets cannot starve the rest.
	LowerPriorityEvery int `yaml:"lower_priority_every"`
	// LimitDelay is how long a request whose project (or token) is at its
	// concurrency limit waits in the delayed set before it is tried again.
	LimitDelay  time.Duration `yaml:"limit_delay"`
	CancelCheck time.Duration `yaml:"cancel_check"` // how often a running pipeline's cancel request is read
	// GuardCheck is how often each pipeline's run guard reads the run's
	// token in Redis: the bound on a pipeline overlapping its successor
	// while its daemon is frozen (lifecycle/runguard).
	GuardCheck time.Duration `yaml:"guard_check"`
	// Output keeps every attempt's full output in a log file; see Output.
	Output Output `yaml:"output"`
	// Pools are the pools this replica's consumers take requests from
	// (PoolNames: [default] when unset); a project's requests wait in its
	// pool's queue until a replica of that pool takes them.
	Pools []string `yaml:"pools"`
}

// PoolNames is the pools this replica's consumers serve: Pools, or
// [DefaultPool] when unset.
func (c Consumer) PoolNames() []string {
	if len(c.Pools) == 0 {
		return []string{DefaultPool}
	}
	return c.Pools
}

// Housekeeping times the StaleJobDetector and EnqueuedReconciler.
type Housekeeping struct {
	FastInterval  time.Duration `yaml:"fast_interval"`
	SlowInterval  time.Duration `yaml:"slow_interval"`
	InstanceTTL   time.Duration `yaml:"instance_ttl"`
	EnqueuedGrace time.Duration `yaml:"enqueued_grace"`
	LeaseTTL      time.Duration `yaml:"lease_ttl"`
	// DelayedInterval is how often due retries move from the delayed set to
	// the queue.
	DelayedInterval time.Duration `yaml:"delayed_interval"`
}

// Poller times the poller's leader lease.
type Poller struct {
	LeaseTTL time.Duration `yaml:"lease_ttl"`
}

// Discovery says how often a replica lists the repositories of its
// discovered projects again (repos patterns, group, installation), so a
// repository created or archived after it started is served or left
// without a restart. Every replica lists for itself: each has its own
// trackers and webhook routes.
type Discovery struct {
	// Interval is the full listing's period (default 10 min): what finds a
	// change no webhook reported (GitLab, Azure DevOps, Jira, or a GitHub
	// delivery lost).
	Interval time.Duration `yaml:"interval"`
	// SignalCheck is how often the replica reads the counter a GitHub
	// repository or installation_repositories webhook bumps (one Redis GET;
	// default 5 s), and so how soon every replica lists again after one.
	SignalCheck time.Duration `yaml:"signal_check"`
}

// Defaults of discovery.
const (
	DefaultDiscoveryInterval    = 10 * time.Minute
	DefaultDiscoverySignalCheck = 5 * time.Second
)

// Webhook bounds what the receiver accepts.
type Webhook struct {
	MaxBodyBytes int64         `yaml:"max_body_bytes"`
	DeliveryTTL  time.Duration `yaml:"delivery_ttl"` // de-duplication window
	// MaxConnections and MaxConnectionsPerAddress cap the connections the
	// webhook listener keeps open, in all and from one source IP (an
	// IPv6 source by its /64); one over a cap is closed at once.
	MaxConnections           int `yaml:"max_connections"`
	MaxConnectionsPerAddress int `yaml:"max_connections_per_address"`
	// BodyTimeout bounds reading a webhook body after its headers, so a
	// slow sender holds a connection for at most the header timeout plus
	// this.
	BodyTimeout time.Duration `yaml:"body_timeout"`
}

// Project is one tracker project whose trigger-labelled tickets run a
// pipeline.
type Project struct {
	Name     string `yaml:"name"`
	Platform string `yaml:"platform"`
	BaseURL  string `yaml:"base_url"`
	Repo     string `yaml:"repo"`
	// Token authenticates to the tracker; shorthand keys token_env / token_file.
	Token Secret `yaml:"token"`
	// GitHubApp authenticates a github project as an App installation
	// instead of with Token.
	GitHubApp    GitHubApp      `yaml:"github_app"`
	TriggerLabel string         `yaml:"trigger_label"`
	Webhook      ProjectWebhook `yaml:"webhook"`
	Polling      Polling        `yaml:"polling"`
	Pipeline     Pipeline       `yaml:"pipeline"`
	Priority     Priority       `yaml:"priority"`
	// Pool is where the project's requests wait: only replicas whose
	// consumer.pools lists it take them (PoolName: DefaultPool when unset).
	Pool string `yaml:"pool"`
	// TokenConcurrency caps the runs at once, across all replicas, of every
	// project that uses this project's tracker token (0: no cap).
	TokenConcurrency int       `yaml:"token_concurrency"`
	Readiness        Readiness `yaml:"readiness"`
	// Trigger says who may start a run by adding the trigger label.
	Trigger Trigger `yaml:"trigger"`
	Stuck   Stuck   `yaml:"stuck"`
	// Jira holds what only Jira projects need.
	Jira Jira `yaml:"jira"`
	// GitHub holds what only GitHub projects choose.
	GitHub GitHub `yaml:"github"`
	// Reactions adds an "eyes" reaction to every ticket this replica
	// claims, so people see it was picked up. Opt-in: it costs one tracker
	// API call per claim. GitHub and GitLab only.
	Reactions bool `yaml:"reactions"`
	// Commands are the comment commands (`/agent-smith retry`, `cancel`).
	Commands Commands `yaml:"commands"`
	// Workspace keeps each ticket's work on a git branch between attempts.
	Workspace Workspace `yaml:"workspace"`
	// Progress "comment" keeps one comment per run on the ticket, edited in
	// place from the lines the pipeline appends to $AGENTSMITH_PROGRESS_FILE
	// (at most every 30 s); "" or "off" posts none.
	Progress string `yaml:"progress"`
	// Repos names a GitHub project's repositories by pattern instead of
	// Repo ("acme/*", "!acme/legacy-*"); see config/discovery.go.
	Repos []string `yaml:"repos"`
	// Group names a GitLab group whose projects (subgroups included) the
	// project serves, instead of Repo; Repos then filter their paths.
	Group string `yaml:"group"`
	// Installation "all" serves every repository a GitHub App project's
	// installation can access, instead of Repo; Repos then filter them.
	Installation string `yaml:"installation"`
	// Overrides change the trigger label or pipeline of some of Repos.
	Overrides []Override `yaml:"overrides"`

	tokenEnv, tokenFile Secret
}

// Progress modes (projects[].progress).
const (
	ProgressOff     = "off"
	ProgressComment = "comment"
)

// DefaultCommandPrefix opens a comment command.
const DefaultCommandPrefix = "/agent-smith"

// Commands configures a project's comment commands: a comment whose first
// line is "<prefix> retry" or "<prefix> cancel" does that, for the people
// trigger.allow admits. The platform must send comment webhooks (GitHub
// issue_comment, GitLab Note Hook, Azure DevOps workitem.commented, Jira
// comment_created) for them to arrive.
type Commands struct {
	// Enabled defaults to true.
	Enabled *bool  `yaml:"enabled"`
	Prefix  string `yaml:"prefix"`
}

// On reports whether the project acts on comment commands.
func (c Commands) On() bool { return c.Enabled == nil || *c.Enabled }

// GitHubApp is a GitHub App installation: the daemon signs a JWT with the
// app's private key and trades it for hour-long installation tokens, so no
// long-lived token exists. Shorthand keys private_key_env /
// private_key_file.
type GitHubApp struct {
	AppID          int64  `yaml:"app_id"`
	InstallationID int64  `yaml:"installation_id"`
	PrivateKey     Secret `yaml:"private_key"`

	privateKeyEnv, privateKeyFile Secret
}

// IsSet reports whether the project configures an app.
func (a *GitHubApp) IsSet() bool {
	return a.AppID != 0 || a.InstallationID != 0 || a.PrivateKey.IsSet() || a.privateKeyEnv.IsSet() || a.privateKeyFile.IsSet()
}

// GitHub holds a GitHub project's choices.
type GitHub struct {
	// API is how lifecycle labels are written: "graphql" (the default,
	// internal/projects.GitHubAPI) with one GraphQL request a transition,
	// charged to GraphQL's own budget, REST being its fallback
	// (docs/github-graphql.md); "rest" with REST's per-label endpoints,
	// two core calls a transition.
	API string `yaml:"api"`
	// PaceSecondary paces the writes before GitHub's secondary limits
	// (80 content creations a minute, 500 an hour, 900 points a minute),
	// counted in Redis across every replica using the token, so a burst of
	// triggered tickets waits instead of being refused. On by default;
	// each write then costs a Redis round trip more.
	PaceSecondary *bool `yaml:"pace_secondary"`
	// PaceLabelsAsContent paces label writes as content creations, which
	// by default pay points only (GitHub does not list what creates
	// content; the reports are of issues and comments): for a token whose
	// label changes GitHub refuses as content creation. It caps the token
	// at 500 label writes an hour. Needs PaceSecondary.
	PaceLabelsAsContent bool `yaml:"pace_labels_as_content"`
}

// Paced reports whether the project's writes are paced before GitHub's
// secondary limits.
func (g GitHub) Paced() bool { return g.PaceSecondary == nil || *g.PaceSecondary }

// GitHub API choices (projects[].github.api).
const (
	GitHubAPIREST    = "rest"
	GitHubAPIGraphQL = "graphql"
)

// Jira says which Jira a project talks to. Cloud authenticates with an
// account's e-mail and API token (basic auth) on REST v3; Data Center with a
// personal access token (bearer) on REST v2.
type Jira struct {
	Deployment string `yaml:"deployment"` // "cloud" (default) or "datacenter"
	Email      string `yaml:"email"`      // required for cloud: the API token's account
	// JQL, instead of repo, makes the project the issues a JQL query
	// selects across the site ("project in (PAY, OPS) AND component =
	// Payments"); see platforms/jira/scope.go.
	JQL string `yaml:"jql"`
}

// ProjectWebhook holds the secrets deliveries are verified against. More
// than one is accepted during a rotation. Shorthand keys secret_env /
// secret_file add one secret each. A project without secrets accepts no
// webhooks and must poll.
type ProjectWebhook struct {
	Secrets []Secret `yaml:"secrets"`

	secretEnv, secretFile Secret
}

// Polling is opt-in per project.
type Polling struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
}

// PipelineSecret is one pipeline credential: the variable Name the pipeline
// sees, its value From an env variable or a file of the daemon.
type PipelineSecret struct {
	Name string `yaml:"name"`
	From Secret `yaml:"from"`
	// Inject, when set, keeps the secret out of the sandbox: the egress
	// proxy adds it to the pipeline's requests to one host, and the
	// pipeline's variable holds only a placeholder.
	Inject *SecretInject `yaml:"inject"`
}

// Pipeline is the command a ticket runs.
type Pipeline struct {
	Command []string          `yaml:"command"` // argv, not a shell string
	Env     map[string]string `yaml:"env"`
	// Secrets are the pipeline's credentials (a repository token for the
	// coding agent): each an environment variable of this project's
	// pipeline only, its value read from the daemon's environment or a file
	// like every other secret, never logged or printed.
	Secrets []PipelineSecret `yaml:"secrets"`
	// RunAs runs the pipeline (and persist_command) as another user:
	// "name", "uid", "name:group" or "uid:gid". The daemon must run as root.
	RunAs       string        `yaml:"run_as"`
	Timeout     time.Duration `yaml:"timeout"`
	MaxAttempts int           `yaml:"max_attempts"`
	Retry       Retry         `yaml:"retry"`
	Escalate    Escalate      `yaml:"escalate"`
	// Concurrency caps this project's runs at once across all replicas
	// (0: no cap).
	Concurrency int `yaml:"concurrency"`
	// PersistCommand runs in the ticket's work dir after a failed attempt,
	// before the ticket is retried or failed (e.g. push a WIP branch).
	PersistCommand []string      `yaml:"persist_command"`
	PersistTimeout time.Duration `yaml:"persist_timeout"`
	// Stages, when set, split the run into ordered stages (stages.go);
	// without them a ticket runs Command once, as a single stage.
	Stages []Stage `yaml:"stages"`
	// Sandbox is this project's limits, hosts and mounts (sandbox.go).
	Sandbox PipelineSandbox `yaml:"sandbox"`

	commandDir string // see CommandDir
}

// Trigger says who may start a run: the trigger label starts a pipeline
// (typically an agent holding repository credentials), so on a tracker
// where outsiders can label tickets (a public GitHub repository's issue
// templates) not everyone who adds it may.
type Trigger struct {
	Allow TriggerAllow `yaml:"allow"`
}

// Trigger access modes.
const (
	// TriggerAccessWrite admits anyone with write access to the repository
	// or project, and the listed users.
	TriggerAccessWrite = "write"
	// TriggerAccessNone admits only the listed users.
	TriggerAccessNone = "none"
)

// TriggerAllow is who may trigger: by Access (default "write": the
// tracker's own write access) and by name (Users, as the platform names
// them in webhooks: GitHub and GitLab usernames, Azure DevOps unique names,
// Jira account ids on Cloud and user names on Data Center) and by team
// (Teams: members of a GitHub team, "org/slug" or a slug in the
// repository's organization; on GitLab, Azure DevOps and Jira, where they
// are groups, a GitLab group's full path, an Azure DevOps group of the
// project, a Jira group name).
type TriggerAllow struct {
	Access string   `yaml:"access"`
	Users  []string `yaml:"users"`
	Teams  []string `yaml:"teams"`
}

// Readiness adds conditions a triggered ticket must meet to be claimed.
type Readiness struct {
	// RequireNoOpenBlockers refuses a claim while a ticket blocking this one
	// (the platform's dependency link) is open; costs one more tracker call
	// per claim (two on Azure DevOps).
	RequireNoOpenBlockers bool `yaml:"require_no_open_blockers"`
}

// Stuck sets when the housekeeping leader flags a ticket as stuck: longer
// than the threshold in Enqueued or InProgress (time in state).
type Stuck struct {
	EnqueuedAfter   time.Duration `yaml:"enqueued_after"`
	InProgressAfter time.Duration `yaml:"in_progress_after"`
	// Comment posts one comment on the ticket per stuck state, besides the
	// log line and the Event.
	Comment bool `yaml:"comment"`
}

// TrackerWriter is the writer name a tracker client tags its writes with:
// name when trackersim_writer_header is on, else "" (no header).
func (c *Config) TrackerWriter(name string) string {
	if c.TrackersimWriterHeader {
		return name
	}
	return ""
}

// HasRole reports whether this replica runs role.
func (c *Config) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

// Project finds a project by name.
func (c *Config) Project(name string) (*Project, bool) {
	for i := range c.Projects {
		if c.Projects[i].Name == name {
			return &c.Projects[i], true
		}
	}
	return nil, false
}

// Load reads and parses the file at path. Relative secret files, pipeline
// commands and the work directory are taken relative to the file's
// directory, so a config and its secrets and scripts can move together.
func Load(path string) (*Config, error) {
	data, baseDir, err := readFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(data, os.LookupEnv, baseDir, AllSecrets, path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// readFile reads the config file and returns its directory, against which
// relative paths in it resolve.
func readFile(path string) ([]byte, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("load config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("load config: %w", err)
	}
	return data, filepath.Dir(abs), nil
}

// Parse decodes a config strictly (unknown fields are errors), applies
// defaults, resolves secrets with lookupEnv (nil means os.LookupEnv; files
// relative to the working directory) and validates. Any problem is returned
// as Errors listing all of them.
func Parse(data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return parse(data, lookupEnv, "", AllSecrets, "")
}

// parse is Parse with relative paths against baseDir, resolving the secret
// groups in need; file names the file in syntax errors ("" for none).
func parse(data []byte, lookupEnv func(string) (string, bool), baseDir string, need Secrets, file string) (*Config, error) {
	var c Config
	var errs Errors
	if !decode(data, &c, &errs, file) {
		return nil, errs
	}
	c.applyDefaults(baseDir)
	c.resolveCommands(baseDir)
	c.Consumer.Output.applyDefaults(baseDir, c.Consumer.WorkDir)
	c.validate(&errs, lookupEnv, baseDir, need)
	c.Consumer.Output.validate(&errs, c.Consumer.WorkDir)
	if len(errs) > 0 {
		return nil, errs
	}
	return &c, nil
}

func (c *Config) applyDefaults(baseDir string) {
	setDefault(&c.Redis.Mode, RedisStandalone)
	setDefault(&c.Listen, DefaultListen)
	setDefault(&c.AdminListen, DefaultAdminListen)
	setDefault(&c.LabelPrefix, DefaultLabelPrefix)
	if c.InstanceID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "agentsmithd"
		}
		c.InstanceID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if len(c.Roles) == 0 {
		c.Roles = slices.Clone(AllRoles)
	}
	cs := &c.Consumer
	setDefault(&cs.Concurrency, DefaultConcurrency)
	setDefault(&cs.CancelCheck, DefaultCancelCheck)
	setDefault(&cs.GuardCheck, DefaultGuardCheck)
	setDefault(&cs.HeartbeatTTL, DefaultHeartbeatTTL)
	setDefault(&cs.HeartbeatRenew, DefaultHeartbeatRenew)
	setDefault(&cs.ShutdownGrace, DefaultShutdownGrace)
	setDefault(&cs.KillGrace, DefaultKillGrace)
	setDefault(&cs.TailBytes, DefaultTailBytes)
	setDefault(&cs.LowerPriorityEvery, DefaultLowerEvery)
	setDefault(&cs.LimitDelay, DefaultLimitDelay)
	if cs.WorkDir == "" {
		cs.WorkDir = lifecycle.DefaultWorkRoot()
	} else if baseDir != "" && !filepath.IsAbs(cs.WorkDir) {
		cs.WorkDir = filepath.Join(baseDir, cs.WorkDir)
	}
	setDefault(&c.ClaimLockTTL, DefaultClaimLockTTL)
	hk := &c.Housekeeping
	setDefault(&hk.FastInterval, DefaultFastInterval)
	setDefault(&hk.SlowInterval, DefaultSlowInterval)
	setDefault(&hk.InstanceTTL, DefaultInstanceTTL)
	setDefault(&hk.EnqueuedGrace, DefaultEnqueuedGrace)
	setDefault(&hk.LeaseTTL, DefaultLeaseTTL)
	setDefault(&hk.DelayedInterval, DefaultDelayedInterval)
	setDefault(&c.Poller.LeaseTTL, DefaultLeaseTTL)
	setDefault(&c.Discovery.Interval, DefaultDiscoveryInterval)
	setDefault(&c.Discovery.SignalCheck, DefaultDiscoverySignalCheck)
	setDefault(&c.Webhook.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.Webhook.DeliveryTTL, DefaultDeliveryTTL)
	setDefault(&c.Webhook.MaxConnections, DefaultMaxConnections)
	setDefault(&c.Webhook.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddress)
	setDefault(&c.Webhook.BodyTimeout, DefaultBodyTimeout)
	setDefault(&c.Audit.MaxLen, DefaultAuditMaxLen)
	c.Sandbox.applyDefaults()
	for i := range c.Projects {
		p := &c.Projects[i]
		if d, ok := platforms.Lookup(p.Platform); ok {
			setDefault(&p.BaseURL, d.DefaultBaseURL)
		}
		setDefault(&p.TriggerLabel, DefaultTriggerLabel)
		setDefault(&p.Trigger.Allow.Access, TriggerAccessWrite)
		setDefault(&p.Commands.Prefix, DefaultCommandPrefix)
		if p.Commands.Enabled == nil {
			on := true
			p.Commands.Enabled = &on
		}
		if p.GitHub.PaceSecondary == nil {
			// On for GitHub; off elsewhere, so the printed config
			// names no GitHub setting on another platform's project.
			d, _ := platforms.Lookup(p.Platform)
			on := d.Capabilities.GitHubAPI
			p.GitHub.PaceSecondary = &on
		}
		setDefault(&p.Polling.Interval, DefaultPollInterval)
		setDefault(&p.Pipeline.Timeout, DefaultPipelineTimeout)
		setDefault(&p.Pipeline.MaxAttempts, DefaultMaxAttempts)
		p.Pipeline.applyDefaults()
		p.Pipeline.applyStageDefaults()
		p.Workspace.Git.applyDefaults(p.Pipeline.Timeout)
		setDefault(&p.Priority.Default, DefaultPriority)
		setDefault(&p.Stuck.EnqueuedAfter, DefaultStuckEnqueued)
		setDefault(&p.Stuck.InProgressAfter, DefaultStuckInProgress)
	}
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
