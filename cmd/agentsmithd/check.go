package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// defaultCheckTimeout bounds each project's checks (and the Redis check):
// every tracker call shares it, so a tracker that hangs costs one project
// this long and never stops the others.
const defaultCheckTimeout = 20 * time.Second

// checkReport is what `check -o json` prints.
type checkReport struct {
	OK       bool                 `json:"ok"`
	Projects []projectCheckReport `json:"projects"`
}

type projectCheckReport struct {
	Name     string                  `json:"name"`
	Platform string                  `json:"platform"`
	Repo     string                  `json:"repo"`
	Checks   []platforms.CheckResult `json:"checks"`
}

// check verifies, per project, against the configured Redis and tracker
// and without writing anything, what the daemon needs to work: Redis
// answers; the token authenticates and may label and comment; the trigger
// label exists; a webhook points here; no approver list names the token's
// own account and no pipeline secret is the daemon's tracker token or an
// approver's (check_approvers.go). A last row per project warns when
// its pipelines could read the daemon's secret files (check_pipelineuser.go).
// It exits 1 on any failure.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var output, receiverURL string
	var timeout, webhookWait time.Duration
	var webhook bool
	cfg, cfgPath, code := loadOnly("check", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&output, "o", "table", "output: table or json")
		fs.StringVar(&receiverURL, "receiver-url", "", "the receiver's public URL (https://agentsmith.example.com); hooks must point under it")
		fs.DurationVar(&timeout, "timeout", defaultCheckTimeout, "time limit for each project's checks")
		fs.BoolVar(&webhook, "webhook", false, "also ask the tracker for a test delivery to each project's hook and report whether the running daemon received and authenticated it (checkwebhook.go)")
		fs.DurationVar(&webhookWait, "webhook-wait", defaultWebhookWait, "with --webhook, how long to wait for the daemon to record the test delivery")
	})
	if cfg == nil {
		return code
	}
	if output != "table" && output != "json" {
		fmt.Fprintf(stderr, "check: -o %q: want table or json\n", output)
		return 2
	}
	// A project that names its repositories by pattern is checked as the
	// daemon will run it: one project per repository found.
	if _, err := discovery.Expand(ctx, cfg, discovery.Options{}); err != nil {
		fmt.Fprintf(stderr, "check: discover repositories: %v\n", err)
		return 1
	}
	wait := time.Duration(0)
	if webhook {
		wait = webhookWait
	}
	// The redis row reports an unreachable Redis: go-redis's own lines
	// (one per dial attempt, on stderr) would only repeat it.
	redisconn.Silence()
	rep := runChecks(ctx, cfg, cfgPath, receiverURL, timeout, wait)
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		writeCheckTables(stdout, rep)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// runChecks checks Redis once and every project at once, each within
// timeout; webhookWait > 0 adds check --webhook's row (checkwebhook.go),
// which may take that much longer.
func runChecks(ctx context.Context, cfg *config.Config, cfgPath, receiverURL string, timeout, webhookWait time.Duration) checkReport {
	rdb, redisResult := checkRedis(ctx, cfg.Redis, timeout)
	if rdb != nil {
		defer func() { _ = rdb.Close() }()
	}
	rep := checkReport{OK: true, Projects: make([]projectCheckReport, len(cfg.Projects))}
	pools, poolsErr := readPools(ctx, cfg, rdb, timeout)
	host := &hostSandbox{}
	var wg sync.WaitGroup
	for i := range cfg.Projects {
		pc := &cfg.Projects[i]
		rep.Projects[i] = projectCheckReport{Name: pc.Name, Platform: pc.Platform, Repo: pc.Repo}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			rep.Projects[i].Checks = append([]platforms.CheckResult{redisResult},
				checkProject(pctx, cfg, pc, rdb, receiverURL)...)
			rep.Projects[i].Checks = append(rep.Projects[i].Checks, checkPipelineUser(cfg, cfgPath, pc), checkSandbox(cfg, pc, host))
			if r, ok := checkPool(pc, pools, poolsErr); ok {
				rep.Projects[i].Checks = append(rep.Projects[i].Checks, r)
			}
			if webhookWait > 0 {
				wctx, cancel := context.WithTimeout(ctx, timeout+webhookWait)
				defer cancel()
				rep.Projects[i].Checks = append(rep.Projects[i].Checks, checkWebhook(wctx, cfg, pc, rdb, receiverURL, webhookWait))
			}
		}()
	}
	wg.Wait()
	for _, p := range rep.Projects {
		for _, c := range p.Checks {
			if c.Status == platforms.CheckFail {
				rep.OK = false
			}
		}
	}
	return rep
}

// checkProject runs one tracker's checks; a panic in them fails this
// project only.
func checkProject(ctx context.Context, cfg *config.Config, pc *config.Project, rdb redis.UniversalClient, receiverURL string) (out []platforms.CheckResult) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, platforms.Fail("internal", fmt.Sprintf("check crashed: %v", r), "report this as a bug"))
		}
	}()
	tr, _, _, err := projects.Tracker(pc, rdb, nil, cfg.TrackerWriter(cfg.InstanceID), cfg.LabelPrefix, nil)
	if err != nil {
		return []platforms.CheckResult{platforms.Fail("tracker", err.Error(), "fix the project's settings (see `agentsmithd validate`)")}
	}
	ch, ok := tr.(platforms.Checker)
	if !ok {
		return []platforms.CheckResult{platforms.Warn("tracker", "no checks for platform "+pc.Platform, "try a first ticket")}
	}
	var lifecycleLabels []string
	gated := slices.ContainsFunc(pc.Pipeline.Stages, func(s config.Stage) bool { return s.Gate != nil && s.Gate.Approval != nil })
	for _, s := range lifecycle.AllStates {
		// Only a project with an approval gate ever parks a ticket (a
		// timer gate's waits enqueued): the others need no
		// awaiting-approval label (an Azure DevOps tag to pre-create).
		if s == lifecycle.AwaitingApproval && !gated {
			continue
		}
		lifecycleLabels = append(lifecycleLabels, lifecycle.Labels{Prefix: cfg.LabelPrefix}.Label(s))
	}
	out = ch.Check(ctx, platforms.CheckOptions{TriggerLabel: pc.TriggerLabel, LifecycleLabels: lifecycleLabels,
		Webhooks: len(pc.Webhook.Secrets) > 0, ReceiverURL: receiverURL, CommentsFor: commentsFor(pc)})
	if r, ok := checkSelfApprover(ctx, pc, tr); ok {
		out = append(out, r)
	}
	if r, ok := checkPipelineSecrets(ctx, cfg, pc); ok {
		out = append(out, r)
	}
	return out
}

// commentsFor names what makes pc act on comments, for the webhook row:
// comment commands (commands.enabled, the default), through which an
// approval gate is also answered (`/agent-smith approve`). "" when
// commands are off: nothing then arrives by comment, and a gate is
// answered by its labels only (lifecycle/command.go ignores every comment;
// the consumer's approval request names the labels only).
func commentsFor(pc *config.Project) string {
	if !pc.Commands.On() {
		return ""
	}
	var gates []string
	for _, s := range pc.Pipeline.Stages {
		if s.Gate != nil && s.Gate.Approval != nil {
			gates = append(gates, s.Name)
		}
	}
	why := "commands.enabled (" + pc.Commands.Prefix + " retry, cancel"
	if len(gates) > 0 {
		why += ", and approve/reject of the approval gate of stage " + strings.Join(gates, ", ")
	}
	return why + ")"
}

// checkRedis pings the configured Redis through the daemon's own client
// (pkg/redisconn, every mode) and names the mode and server version.
func checkRedis(ctx context.Context, rc config.Redis, timeout time.Duration) (redis.UniversalClient, platforms.CheckResult) {
	const name = "redis"
	if len(rc.Addrs) == 0 {
		return nil, platforms.Fail(name, "redis.addr is empty", "set redis.addr (the embedded Redis is for `agentsmithd demo` only)")
	}
	where := fmt.Sprintf("%s %s", rc.Mode, strings.Join(rc.Addrs, ","))
	if rc.Mode == config.RedisSentinel {
		where += " master " + rc.MasterName
	}
	rdb, err := projects.Redis(rc, 0)
	if err != nil {
		return nil, platforms.Fail(name, where+": "+err.Error(), "fix the redis block (see `agentsmithd validate`)")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return rdb, platforms.Fail(name, where+": "+err.Error(), "start Redis or fix redis.addr(s), credentials and TLS")
	}
	version := "?"
	if info, err := rdb.Info(ctx, "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				version = v
			}
		}
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		info, err := cc.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return rdb, platforms.Fail(name, where+": cluster_state is not ok", "fix the cluster (redis-cli --cluster check)")
		}
	}
	return rdb, platforms.OK(name, "%s (redis %s)", where, version)
}

// writeCheckTables prints one table per project.
func writeCheckTables(w io.Writer, rep checkReport) {
	for i, p := range rep.Projects {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s %s)\n", p.Name, p.Platform, p.Repo)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL\tFIX")
		for _, c := range p.Checks {
			fix := c.Fix
			if fix == "" {
				fix = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Status, c.Detail, fix)
		}
		_ = tw.Flush()
	}
	if rep.OK {
		fmt.Fprintln(w, "\nno failures")
	} else {
		fmt.Fprintln(w, "\nFAILED: fix the lines marked fail and run check again")
	}
}
