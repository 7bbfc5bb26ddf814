package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
)

// exitError carries an exit code other than 1.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &codedError{exitUsage, fmt.Errorf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &codedError{exitNotFound, fmt.Errorf(format, a...)}
}

// app is what every command shares: the loaded config and clients, built on
// first use so `completion` and `help` need no config.
type app struct {
	cfgPath string
	output  string
	out     io.Writer
	errOut  io.Writer
	clock   func() time.Time
	// followEvery is how often logs --follow polls (default followInterval).
	followEvery time.Duration

	cfg      *config.Config
	rdb      redis.UniversalClient
	projects lifecycle.Projects
}

// need is what a command reads from the config and the environment: load
// resolves that and nothing more, so an operator's shell needs only the
// secrets the command uses.
type need string

const (
	// needNothing: no config (completion, help).
	needNothing need = "nothing"
	// needRedis: the redis section and its password, for the commands
	// that only read or write Redis.
	needRedis need = "`redis` and its password"
	// needTrackers: needRedis, and the whole config validated with every
	// project's tracker token or GitHub App key, for the commands that
	// call a tracker.
	needTrackers need = "`redis` and its password, every project's tracker token (or GitHub App key)"
	// needStatusToken: status.token alone (or the file beside the config).
	needStatusToken need = "`status.token` (or the token file beside the config)"
)

// commandNeeds is each command's requirement set; docs/operations.md
// lists it for operators (TestCommandNeedsDocumented keeps the two alike).
var commandNeeds = map[string]need{
	"status":       needRedis,
	"tickets":      needTrackers,
	"history":      needRedis,
	"logs":         needRedis,
	"events":       needRedis,
	"requeue":      needTrackers,
	"retry":        needTrackers,
	"approve":      needTrackers,
	"reject":       needTrackers,
	"release":      needRedis,
	"cancel":       needRedis,
	"pause":        needRedis,
	"resume":       needRedis,
	"report":       needRedis,
	"status-token": needStatusToken,
}

// configPath is -c, else $AGENTSMITH_CONFIG.
func (a *app) configPath() (string, error) {
	if a.cfgPath == "" {
		a.cfgPath = os.Getenv("AGENTSMITH_CONFIG")
	}
	if a.cfgPath == "" {
		return "", usageErr("-c/--config is required (the daemon's config file), or set AGENTSMITH_CONFIG")
	}
	return a.cfgPath, nil
}

// loadFor loads what n says, once per process.
func (a *app) loadFor(ctx context.Context, n need) error {
	switch n {
	case needRedis:
		return a.load()
	case needTrackers:
		return a.loadTrackers(ctx)
	}
	return nil
}

// load reads the redis section alone (config.LoadRedisOnly: projects are
// decoded for their names and repositories, no tracker, webhook, status or
// pipeline secret is read) and builds the Redis client.
func (a *app) load() error {
	if a.cfg != nil {
		return nil
	}
	if err := a.checkOutput(); err != nil {
		return err
	}
	path, err := a.configPath()
	if err != nil {
		return err
	}
	cfg, err := config.LoadRedisOnly(path)
	if err != nil {
		return err
	}
	return a.connect(cfg)
}

func (a *app) checkOutput() error {
	if a.output != "table" && a.output != "json" {
		return usageErr("-o %q: want table or json", a.output)
	}
	return nil
}

// connect builds the Redis client as the daemon does (projects.Redis over
// pkg/redisconn: standalone, sentinel or cluster, ACL user, TLS) with the
// daemon's key layout for the mode.
func (a *app) connect(cfg *config.Config) error {
	if len(cfg.Redis.Addrs) == 0 {
		return fmt.Errorf("config: redis.addr (or redis.addrs) is empty (an embedded Redis lives only inside its daemon)")
	}
	if err := keys.UseHashTag(cfg.Redis.Mode == config.RedisCluster); err != nil {
		return fmt.Errorf("redis.mode %s: %w", cfg.Redis.Mode, err)
	}
	rdb, err := projects.Redis(cfg.Redis, 0)
	if err != nil {
		return err
	}
	a.cfg, a.rdb = cfg, rdb
	return nil
}

// queue is the queue with the daemon's layout, built by the same function
// the daemon uses (projects.Queue), so a request waiting on a priority
// level or in the delayed set is found and counted. It needs load.
func (a *app) queue() *queue.Queue { return projects.Queue(a.rdb, a.cfg) }

// loadTrackers loads the whole config with the Redis and tracker secrets
// (config.LoadFor: no webhook, status or pipeline secret), connects to
// Redis and builds every project's tracker, for the commands that talk to
// trackers (tickets, requeue, retry).
func (a *app) loadTrackers(ctx context.Context) error {
	if a.projects != nil {
		return nil
	}
	if err := a.checkOutput(); err != nil {
		return err
	}
	path, err := a.configPath()
	if err != nil {
		return err
	}
	cfg, err := config.LoadFor(path, config.RedisSecrets|config.TrackerSecrets)
	if err != nil {
		return fmt.Errorf("this command calls the trackers and needs their tokens: %w", err)
	}
	if a.rdb == nil {
		if err := a.connect(cfg); err != nil {
			return err
		}
	}
	if _, err := discovery.Expand(ctx, cfg, discovery.Options{}); err != nil {
		return err
	}
	a.cfg = cfg
	a.projects = lifecycle.Projects{}
	for i := range cfg.Projects {
		pc := &cfg.Projects[i]
		// The daemon's transport: the token's rate-limit budget is the one
		// every replica shares through Redis, so an operator's command
		// neither spends what a replica already learnt is gone nor keeps
		// what it learns to itself; its writes take their share of the
		// secondary limits' pacing like a replica's.
		hc := trackerhttp.NewClientWith(trackerhttp.Options{Writer: cfg.TrackerWriter(a.instance()),
			RateLimits: projects.ProjectRateLimits(pc), Budget: budget.New(a.rdb, nil), PaceSecondary: pc.GitHub.Paced()})
		tr, _, _, err := projects.Tracker(pc, a.rdb, hc, cfg.TrackerWriter(a.instance()), cfg.LabelPrefix, zap.NewNop())
		if err != nil {
			return fmt.Errorf("projects[%d] (%s): %w", i, pc.Name, err)
		}
		a.projects[pc.Name] = projects.Lifecycle(pc, tr)
	}
	return nil
}

func (a *app) instance() string {
	host, _ := os.Hostname()
	return "agentsmithctl@" + host
}

func (a *app) labels() lifecycle.Labels { return lifecycle.Labels{Prefix: a.cfg.LabelPrefix} }

func (a *app) close() {
	if a.rdb != nil {
		_ = a.rdb.Close()
	}
}

// project returns the named project, or the only one configured.
func (a *app) project(name string) (*config.Project, error) {
	if name == "" {
		if len(a.cfg.Projects) == 1 {
			return &a.cfg.Projects[0], nil
		}
		return nil, usageErr("--project is required: the config has %d projects", len(a.cfg.Projects))
	}
	p, ok := a.cfg.Project(name)
	if !ok {
		return nil, notFound("project %q is not in %s", name, a.cfgPath)
	}
	return p, nil
}

// loadTicket loads the config and parses the command's ticket argument: the
// first step of every command that acts on one ticket.
func (a *app) loadTicket(arg, project string) (platforms.Ref, error) {
	if err := a.load(); err != nil {
		return platforms.Ref{}, err
	}
	return a.ticket(arg, project)
}

// ticket parses "platform:id" (github:acme/app#12, jira:PROJ-7) and binds it
// to --project, or to the configured project of that platform whose
// repository the id names.
func (a *app) ticket(arg, project string) (platforms.Ref, error) {
	platform, id, ok := strings.Cut(arg, ":")
	if !ok || platform == "" || id == "" {
		return platforms.Ref{}, usageErr("ticket %q: want platform:id, such as github:acme/app#12 or jira:PROJ-7", arg)
	}
	ref := platforms.Ref{Platform: platform, ID: id}
	if project != "" {
		p, err := a.project(project)
		if err != nil {
			return ref, err
		}
		if p.Platform != platform {
			return ref, usageErr("ticket %s is on %s, project %s on %s", arg, platform, p.Name, p.Platform)
		}
		ref.Project = p.Name
		return ref, nil
	}
	var scopes []string
	for i := range a.cfg.Projects {
		pc := &a.cfg.Projects[i]
		if pc.Platform == platform && belongs(id, pc.Repo) {
			ref.Project = pc.Name
			return ref, nil
		}
		if pc.Platform == platform && pc.Jira.JQL != "" {
			scopes = append(scopes, pc.Name)
		}
	}
	if len(scopes) == 1 {
		// The site's one JQL scope: a key no key-bound project claims is
		// its, as the receiver routes it.
		ref.Project = scopes[0]
		return ref, nil
	}
	return ref, notFound("ticket %s: no configured %s project has repository %q (use --project)", arg, platform, locatorOf(id))
}

// belongs reports whether id is "<repo><sep><number>" with sep '#' or '-'
// (Jira keys), comparing the repository case-insensitively as the
// platforms do.
func belongs(id, repo string) bool {
	loc := locatorOf(id)
	return loc != "" && strings.EqualFold(loc, repo)
}

func locatorOf(id string) string {
	i := strings.LastIndexAny(id, "#-")
	if i <= 0 || strings.Trim(id[i+1:], "0123456789") != "" || i == len(id)-1 {
		return ""
	}
	return id[:i]
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentsmithctl",
		Short: "Operate an agentsmithd fleet: status, tickets, history, requeue, retry, approve, reject, release, cancel, pause, resume, reports",
		Long: `agentsmithctl reads the daemon's config file (-c) to reach its Redis and trackers.

Tickets are written platform:id, e.g. github:acme/app#12, gitlab:group/app#3,
azuredevops:org/project#1234, jira:PROJ-7; the project is inferred from the
config unless --project is given.

Exit codes: 0 ok, 1 error, 2 usage, 3 not found.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.out)
	root.SetErr(a.errOut)
	// The default is read at load, not shown as a flag default, so help
	// names $AGENTSMITH_CONFIG once rather than also printing its value.
	root.PersistentFlags().StringVarP(&a.cfgPath, "config", "c", "", "the daemon's config file (default $AGENTSMITH_CONFIG)")
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &codedError{exitUsage, err} })
	root.AddCommand(statusCmd(a), ticketsCmd(a), historyCmd(a), logsCmd(a), eventsCmd(a), requeueCmd(a), retryCmd(a), approveCmd(a),
		rejectCmd(a), releaseCmd(a), cancelCmd(a), pauseCmd(a), resumeCmd(a), reportCmd(a), statusTokenCmd(a))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		n, ok := commandNeeds[cmd.Name()]
		if !ok || cmd.Parent() != root {
			n = needNothing
		}
		return a.loadFor(cmd.Context(), n)
	}
	return root
}

// args wraps a cobra argument check so its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return &codedError{exitUsage, err}
		}
		return nil
	}
}

// run executes one command line and returns its exit code.
func run(ctx context.Context, argv []string, out, errOut io.Writer) int {
	out, errOut = termSafe(out), termSafe(errOut)
	// go-redis's own log lines (sentinel master changes, cluster
	// redirections, pool dial retries) would interleave with the output;
	// a failure reaches the operator as the command's error.
	redisconn.UseZap(zap.NewNop())
	a := &app{out: out, errOut: errOut, clock: time.Now}
	defer a.close()
	root := newRoot(a)
	root.SetArgs(argv)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(errOut, "agentsmithctl:", err)
	var ce *codedError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, platforms.ErrNotFound):
		return exitNotFound
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown flag"):
		return exitUsage
	}
	return exitError
}
