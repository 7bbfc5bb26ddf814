package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// demoPipeline succeeds unless the ticket's title asks it to fail; it reads
// the ticket from its environment like a real pipeline would.
const demoPipeline = `echo "agent working on $AGENTSMITH_TICKET_ID: $AGENTSMITH_TITLE (attempt $AGENTSMITH_ATTEMPT)"
sleep 1
case "$AGENTSMITH_TITLE" in
  *flaky*) echo "FAIL: TestCheckout (0.42s)" ; echo "expected 200, got 500" >&2 ; exit 3 ;;
esac
echo "opened a pull request"`

// demoHeader is the demo's config: the same format agentsmithd serve reads.
const demoHeader = `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
instance_id: demo-replica
trackersim_writer_header: true
redis: %s
consumer: {concurrency: 3, work_dir: "%s"}
housekeeping: {fast_interval: 1s, slow_interval: 5s}
`

// demoProject is one project of the demo; webhook is the trigger unless
// polling is on.
const demoProject = `  - name: %s
    %s
    webhook: {secrets: [{env: DEMO_WEBHOOK_SECRET}]}
    polling: {enabled: %t, interval: 2s}
    pipeline: %s
`

// demoProjects: one project per platform, each on its own repository of the
// sandbox, and a staged one (plan → implement) on GitHub; Jira's is found
// by polling, the others by signed webhooks.
var demoProjects = []struct {
	name string
	pc   simcases.Case
	poll bool
	// tickets are the titles of the issues a human labels.
	tickets []string
}{
	{"webshop", simcases.GitHub.WithRepo("demo/webshop"), false, []string{"Fix login redirect loop", "Checkout is flaky on Safari"}},
	{"storefront", simcases.GitHub.WithRepo(demoStorefrontRepo), false, []string{"Show stock on the product page"}},
	{"platform-api", simcases.GitLab.WithRepo("demo/platform/api"), false, []string{"Add rate limiting to /search"}},
	{"mobile", simcases.AzureDevOps.WithRepo("demoorg/mobile"), false, []string{"Dark mode for settings screen"}},
	{"ops", simcases.Jira.WithRepo("OPS"), true, []string{"Rotate the staging certificates"}},
}

// demoReviewer is the demo's person who approves a ticket parked at an
// approval gate (demo/storefront's implement stage): a user with write
// access to every repository of the sandbox, which the project's
// trigger.allow (default access: write) admits as an approver.
const demoReviewer = "dana"

// demoApprove is the comment command demoReviewer approves with.
const demoApprove = "/agent-smith approve"

// demoPipelineToken is the pipelines' sandbox token on the sim, another
// value than the daemon's. The sim accepts any token and writes every API
// change as one user, so it stands for the operator's narrower pipeline
// token in name and value, not in identity.
const demoPipelineToken = "demo-pipeline-token"

// demoRedis is how the demo's daemon reaches its Redis: the address and
// the password the demo gave it ("" for none).
type demoRedis struct{ addr, password string }

// demoConfig is the demo's config, parsed like a config file, with the
// token and webhook secret resolved from a private environment; box is
// its sandbox block (demoSandbox).
func demoConfig(rd demoRedis, workDir, simURL, token, secret string, pr demoPR, box string) (*config.Config, error) {
	// The pipelines get a token of their own (DEMO_PIPELINE_TOKEN), never
	// the daemon's: with the daemon's, a pipeline could approve its own
	// plan.
	env := map[string]string{"DEMO_TOKEN": token, "DEMO_PIPELINE_TOKEN": demoPipelineToken, "DEMO_WEBHOOK_SECRET": secret,
		"DEMO_REDIS_PASSWORD": rd.password}
	redis := fmt.Sprintf("{addr: %q}", rd.addr)
	if rd.password != "" {
		redis = fmt.Sprintf("{addr: %q, password_env: DEMO_REDIS_PASSWORD}", rd.addr)
	}
	var yaml strings.Builder
	fmt.Fprintf(&yaml, demoHeader, redis, workDir)
	yaml.WriteString(box)
	yaml.WriteString("projects:\n")
	for _, p := range demoProjects {
		pipeline := fmt.Sprintf(`{command: ["sh", "-c", %q], timeout: 30s, max_attempts: 2}`, demoPipeline)
		switch {
		case pr.script == "":
		case p.pc.Repo == demoPRRepo:
			pipeline = pr.pipeline(simURL)
		case p.pc.Repo == demoStorefrontRepo:
			pipeline = pr.stagedPipeline(simURL)
		}
		fmt.Fprintf(&yaml, demoProject, p.name, p.pc.Project(simURL, "DEMO_TOKEN", "    "), p.poll, pipeline)
	}
	return config.Parse([]byte(yaml.String()), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep serving after every ticket settled (Ctrl-C to stop)")
	verbose := fs.Bool("v", false, "print the daemon's logs")
	timeout := fs.Duration("timeout", 90*time.Second, "give up if tickets have not settled by then")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	tmp, err := os.MkdirTemp("", "agentsmithd-demo-")
	if err != nil {
		say("demo: %v", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	// Others may pass through to the work dirs, the pipelines and the
	// bare repositories: each sandboxed run has a uid of its own.
	if err := os.Chmod(tmp, 0o711); err != nil {
		say("demo: %v", err)
		return 1
	}
	redisPassword := demoSecret()
	redisAddr, stopRedis, err := startDemoRedis(ctx, tmp, say, redisPassword)
	if err != nil {
		say("demo: start redis: %v", err)
		return 1
	}
	defer stopRedis()

	pr, err := setupDemoPR(tmp)
	if err != nil {
		say("  note: %v", err)
	}
	s := trackersim.New(trackersim.Options{Branches: pr.branchExists})
	defer s.Close()
	s.SetUserRole(demoReviewer, trackersim.RoleWrite)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		say("demo: listen: %v", err)
		return 1
	}
	simSrv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = simSrv.Serve(ln) }()
	defer simSrv.Close()
	simURL := "http://" + ln.Addr().String()

	secret := "demo-secret-" + fmt.Sprint(time.Now().UnixNano())
	box := demoSandbox(tmp, ln.Addr().String(), pr)
	say("  %s", box.says)
	cfg, err := demoConfig(demoRedis{redisAddr, redisPassword}, filepath.Join(tmp, "work"), simURL, "demo-token", secret, pr, box.yaml)
	if err != nil {
		say("demo: config: %v", err)
		return 1
	}
	log := zap.NewNop()
	if *verbose {
		log = newLogger("console", stderr)
	}
	if box.remove != nil {
		defer box.remove()
	}
	d, err := daemon.New(cfg, daemon.Options{Logger: log, OwnRedis: true, SandboxExe: box.exe}) // it started Redis just now
	if err != nil {
		say("demo: %v", err)
		return 1
	}
	dctx, stopDaemon := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	defer func() { stopDaemon(); <-done }()
	select {
	case <-d.Listening():
	case err := <-done:
		say("demo: daemon: %v", err)
		return 1
	}
	for _, p := range demoProjects {
		if !p.poll {
			s.AddHook(p.pc.Hook("http://"+d.Addr(), secret))
		}
	}

	say("")
	say("  tracker sandbox (watch the labels change): %s/", simURL)
	say("  webhook receiver:                         http://%s/webhooks/{github,gitlab,azuredevops,jira}", d.Addr())
	say("  metrics (admin listener):                 http://%s/metrics", d.AdminAddr())
	say("  status page (queue, runs, audit events):  http://%s/status", d.AdminAddr())
	say("  admin token (status page login; Authorization: Bearer for /metrics): %s", d.StatusToken())
	say("")
	type key struct {
		repo string
		n    int
	}
	var watch []key
	s.CreateIssue("demo/webshop", "Refactor CSS (no trigger label: never touched)", "", "enhancement")
	for _, p := range demoProjects {
		for _, title := range p.tickets {
			n := s.CreateIssue(p.pc.Repo, title, "Created by agentsmithd demo.", "good-first-issue")
			watch = append(watch, key{p.pc.Repo, n})
		}
	}
	// A human adds the trigger label: GitHub sends issues/labeled.
	for _, k := range watch {
		if err := s.AddLabels(k.repo, k.n, "agent-smith"); err != nil {
			say("demo: label: %v", err)
			return 1
		}
	}
	platformOf := map[string]string{}
	for _, p := range demoProjects {
		platformOf[p.pc.Repo] = p.pc.Name
	}
	sw := 0 // the state columns' width: the longest state's name
	for _, st := range lifecycle.AllStates {
		sw = max(sw, len(st.String()))
	}
	say("%-8s  %-11s  %-22s  %-*s → %-*s  %s", "time", "platform", "ticket", sw, "from", sw, "to", "writer")
	labels := lifecycle.Labels{Prefix: cfg.LabelPrefix}
	var stages []string // every project's, to show a staged ticket's stage
	for _, p := range cfg.Projects {
		stages = append(stages, p.Pipeline.StageNames()...)
	}
	staged := labels.WithStages(stages)
	deadline := time.After(*timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	printed := 0
	// asked holds the parked tickets demoReviewer approved, until the gate
	// moves them on.
	asked := map[key]bool{}
	for {
		writes := s.Writes()
		for _, w := range writes[printed:] {
			from, to := labels.StateOf(w.Before), labels.StateOf(w.After)
			if from == to && !(from == lifecycle.Pending && len(labels.Lifecycle(w.After)) > 0) {
				continue
			}
			stage := ""
			if st := staged.StageOf(w.After); st != "" {
				stage = "  (stage " + st + ")"
			}
			say("%-8s  %-11s  %-22s  %-*s → %-*s  %s%s", w.At.Format("15:04:05"), platformOf[w.Repo], fmt.Sprintf("%s#%d", w.Repo, w.Number), sw, from, sw, to, w.Writer, stage)
		}
		printed = len(writes)
		settled := 0
		for _, k := range watch {
			is, ok := s.Issue(k.repo, k.n)
			if !ok {
				continue
			}
			switch st := labels.StateOf(is.Labels); {
			case st.Terminal():
				settled++
			case st != lifecycle.AwaitingApproval:
				delete(asked, k)
			case !asked[k]:
				// The stage before posted its result for review before it
				// parked the ticket: the reviewer reads it and approves
				// with a comment, which the sandbox delivers as a webhook.
				if err := s.As(demoReviewer).AddComment(k.repo, k.n, demoApprove); err != nil {
					say("demo: approve: %v", err)
					return 1
				}
				asked[k] = true
				say("%-8s  %-11s  %-22s  %s comments %q", time.Now().Format("15:04:05"), platformOf[k.repo], fmt.Sprintf("%s#%d", k.repo, k.n), demoReviewer, demoApprove)
			}
		}
		if settled == len(watch) {
			break
		}
		select {
		case <-ctx.Done():
			return 130
		case <-deadline:
			say("demo: tickets did not settle within %s", *timeout)
			return 1
		case <-tick.C:
		}
	}
	say("")
	for _, k := range watch {
		is, _ := s.Issue(k.repo, k.n)
		say("  %-22s %-40q labels: %s", fmt.Sprintf("%s#%d", k.repo, k.n), is.Title, strings.Join(is.Labels, ", "))
		for _, c := range is.Comments {
			say("      comment: %s", strings.ReplaceAll(strings.TrimSpace(c.Body), "\n", "\n               "))
		}
		// The pull request the offline pipeline opened for this ticket: its
		// body names the ticket ("Resolves demo/webshop#2").
		for _, p := range s.PullRequests(k.repo) {
			if slices.Contains(strings.Fields(p.Body), fmt.Sprintf("%s#%d", k.repo, k.n)) {
				say("      pull request: %s (%s → %s)", p.HTMLURL, p.Head, p.Base)
			}
		}
	}
	say("")
	say("every ticket settled; other labels untouched.")
	say("")
	for _, line := range demoNextSteps(*keep) {
		say("%s", line)
	}
	if *keep {
		say("serving until Ctrl-C: %s/ and http://%s/status", simURL, d.Addr())
		<-ctx.Done()
	}
	return 0
}

// demoNextSteps is what the demo tells a newcomer to do after it: look
// around a live demo (--keep), then serve a project of their own (the
// README's walkthrough).
func demoNextSteps(keep bool) []string {
	steps := []string{"next:"}
	if !keep {
		steps = append(steps, "  agentsmithd demo --keep    the same demo, left running: browse the tracker sandbox and /status")
	}
	return append(steps,
		`  README.md, "Your first real project in five minutes"    your own config, webhook and pipeline`,
		"  agentsmithd --help    every command (validate, check, serve)")
}

// startDemoRedis starts a real redis-server on a free port when one is
// installed, else an embedded in-process Redis (single replica only).
func startDemoRedis(ctx context.Context, dir string, say func(string, ...any), password string) (string, func(), error) {
	if bin, err := redisserver.FindBinary(); err == nil {
		p, err := redisserver.StartSpec(ctx, bin, dir, redisserver.Spec{Args: []string{"--requirepass", password}, Password: password})
		if err != nil {
			return "", nil, err
		}
		say("  redis: %s (redis-server on a free port)", p.Addr())
		return p.Addr(), func() { _ = p.Stop() }, nil
	}
	m := miniredis.NewMiniRedis()
	m.RequireAuth(password)
	if err := m.Start(); err != nil {
		return "", nil, err
	}
	say("  ******************************************************************")
	say("  * redis-server not found: using an EMBEDDED in-process Redis.    *")
	say("  * Fine for this single-replica demo; nothing survives a restart, *")
	say("  * and replicas cannot share it. Install redis-server for real use.*")
	say("  ******************************************************************")
	return m.Addr(), m.Close, nil
}

// demoBox is how the demo shuts its pipelines in.
type demoBox struct {
	yaml   string // the config's sandbox block
	exe    string // the sandbox's init binary; "" with the sandbox off
	remove func() // removes the init binary's copy
	says   string // the line the demo prints about it
}

// demoSandbox turns the sandbox on where it starts: the pipelines see
// their scripts and the bare repositories (the pull-request pipeline
// pushes there) and reach the tracker sandbox at simAddr, by IP, through
// the egress proxy. Where it cannot start, the demo runs them on the host
// and says why; its Redis asks for a password either way.
func demoSandbox(dir, simAddr string, pr demoPR) demoBox {
	off := func(why string) demoBox {
		return demoBox{yaml: "sandbox: {mode: off}\n", says: "sandbox: OFF (" + why + "): pipelines run on this host"}
	}
	self, err := os.Executable()
	if err != nil {
		return off(err.Error())
	}
	exe, remove, err := sandbox.ReachableExe(self, "")
	if err != nil {
		return off(err.Error())
	}
	if err := sandbox.Available(exe); err != nil {
		remove()
		return off(err.Error())
	}
	var mounts []string
	if pr.script != "" {
		mounts = append(mounts, fmt.Sprintf("{path: %q}", filepath.Join(dir, "pipelines")),
			fmt.Sprintf("{path: %q, writable: true}", filepath.Join(dir, "git")))
	}
	yaml := fmt.Sprintf("sandbox:\n  mounts: [%s]\n  network: {allow: [%q]}\n", strings.Join(mounts, ", "), simAddr)
	who := "a uid of its own"
	if os.Geteuid() != 0 {
		who = "this user's uid"
	}
	return demoBox{yaml: yaml, exe: exe, remove: remove,
		says: "sandbox: on: each pipeline runs with " + who + ", its own namespaces, and no network but the tracker sandbox"}
}

// demoSecret is a random password for the demo's Redis.
func demoSecret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
