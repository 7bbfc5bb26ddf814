package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/platforms"
)

const testdata = "../testdata/config/"

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func mustParse(t *testing.T, yml string, vars map[string]string) *Config {
	t.Helper()
	c, err := Parse([]byte(yml), env(vars))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func parseErrs(t *testing.T, yml string, vars map[string]string) []string {
	t.Helper()
	_, err := Parse([]byte(yml), env(vars))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestDefaults(t *testing.T) {
	// The work dir's default follows lifecycle.DefaultWorkRoot: under
	// systemd's StateDirectory= here, never $TMPDIR.
	state := t.TempDir()
	t.Setenv("STATE_DIRECTORY", state)
	data, err := os.ReadFile(testdata + "minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data, env(map[string]string{"GITHUB_TOKEN": "ghp_minimal"}))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	want := Config{
		Redis:       Redis{Mode: RedisStandalone},
		Listen:      ":8080",
		AdminListen: "127.0.0.1:9090",
		LabelPrefix: "agent-smith",
		InstanceID:  fmt.Sprintf("%s-%d", host, os.Getpid()),
		Roles:       []string{"receiver", "poller", "consumer", "housekeeping"},
		Consumer: Consumer{
			Concurrency: 4, HeartbeatTTL: 2 * time.Minute, HeartbeatRenew: 30 * time.Second,
			ShutdownGrace: 10 * time.Second, KillGrace: 10 * time.Second,
			WorkDir: filepath.Join(state, "work"), TailBytes: 4096,
			LowerPriorityEvery: 10, LimitDelay: 2 * time.Second, CancelCheck: 5 * time.Second, GuardCheck: 2 * time.Second,
			Output: Output{LogsDir: filepath.Join(state, "work-logs"), LogMaxBytes: DefaultLogMaxBytes, Retention: Retention{MaxAge: DefaultRetentionMaxAge, MaxBytes: DefaultRetentionMaxBytes, Interval: DefaultRetentionInterval}},
		},
		ClaimLockTTL: 30 * time.Second,
		Housekeeping: Housekeeping{
			FastInterval: 5 * time.Second, SlowInterval: 60 * time.Second, InstanceTTL: 15 * time.Second,
			EnqueuedGrace: 30 * time.Second, LeaseTTL: 15 * time.Second, DelayedInterval: time.Second,
		},
		Poller:    Poller{LeaseTTL: 15 * time.Second},
		Discovery: Discovery{Interval: 10 * time.Minute, SignalCheck: 5 * time.Second},
		Webhook: Webhook{MaxBodyBytes: 1 << 20, DeliveryTTL: 24 * time.Hour, MaxConnections: 1024,
			MaxConnectionsPerAddress: 64, BodyTimeout: 10 * time.Second},
		Audit: Audit{MaxLen: 100_000},
		Sandbox: Sandbox{Mode: SandboxOn, UIDRange: UIDRange{First: 1879048192, Count: 65536},
			Limits: Limits{Memory: "4GiB", Processes: 1024, CPU: 2}},
	}
	got := *c
	got.Projects = nil
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if len(c.Projects) != 1 {
		t.Fatalf("projects: %+v", c.Projects)
	}
	p := c.Projects[0]
	if p.BaseURL != "https://api.github.com/" || p.TriggerLabel != "agent-smith" ||
		p.Polling.Interval != time.Minute || !p.Polling.Enabled || p.Pipeline.Timeout != 30*time.Minute ||
		p.Pipeline.MaxAttempts != 3 || !slices.Equal(p.Pipeline.Command, []string{"./run.sh"}) ||
		p.Readiness.RequireNoOpenBlockers || p.Stuck != (Stuck{EnqueuedAfter: 30 * time.Minute, InProgressAfter: 2 * time.Hour}) {
		t.Errorf("project defaults: %+v", p)
	}
	if p.Token.Value() != "ghp_minimal" || p.Token.String() != "env:GITHUB_TOKEN" {
		t.Errorf("token %v", p.Token)
	}
	if c.Redis.Addr != "" || c.Redis.Password.IsSet() {
		t.Errorf("redis %+v", c.Redis)
	}
}

func TestDemoConfig(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_demo")
	t.Setenv("GH_WEBHOOK_SECRET", "whsec-new")
	t.Setenv("GH_WEBHOOK_SECRET_PREVIOUS", "whsec-old")
	t.Setenv("REDIS_PASSWORD", "redispw")
	c, err := Load(testdata + "github-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.Addr != "127.0.0.1:6380" || c.Redis.Password.Value() != "redispw" || c.InstanceID != "demo-1" {
		t.Errorf("top level: %+v", c)
	}
	p, ok := c.Project("demo")
	if !ok {
		t.Fatal("project demo missing")
	}
	var secrets []string
	for _, s := range p.Webhook.Secrets {
		secrets = append(secrets, s.Value())
	}
	if !slices.Equal(secrets, []string{"whsec-new", "whsec-old"}) {
		t.Errorf("webhook secrets %q", secrets)
	}
	if p.Repo != "octo-org/octo-repo" || p.Token.Value() != "ghp_demo" || p.Pipeline.Env["MODEL"] != "small" ||
		!slices.Equal(p.Pipeline.Command, []string{filepath.Join(p.Pipeline.CommandDir(), "pipelines", "implement.sh"), "--verbose"}) {
		t.Errorf("project: %+v", p)
	}
	if err := c.CheckCommands(); err != nil {
		t.Errorf("the demo's pipelines are in testdata/config: %v", err)
	}
	if _, ok := c.Project("nope"); ok {
		t.Error("found a project that does not exist")
	}
	// The demo spells every default out; it must agree with the code.
	if c.Consumer.HeartbeatTTL != DefaultHeartbeatTTL || c.ClaimLockTTL != DefaultClaimLockTTL ||
		c.Webhook.MaxBodyBytes != DefaultMaxBodyBytes || c.Housekeeping.EnqueuedGrace != DefaultEnqueuedGrace {
		t.Errorf("demo disagrees with defaults: %+v", c)
	}
}

func TestBadReportsEverything(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(testdata + "bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(data, env(map[string]string{"GITHUB_TOKEN": "ghp_ok", "GL_TOKEN": "glpat"}))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %T %v", err, err)
	}
	known := strings.Join(platforms.Names(), ", ")
	want := []string{
		`consumer.tail_bytes: expected an integer (line 9)`,
		`claim_lock_ttl: expected a duration such as "30s" (line 10)`,
		`housekeeping.fast_intervall: unknown field; did you mean "fast_interval"? (line 12)`,
		`projects[0].token: expected {env: NAME} or {file: PATH}; the secret itself does not belong in the config (line 18)`,
		`listen: expected host:port such as ":8080"`,
		`instance_id: must not contain spaces or control characters`,
		`roles[1]: unknown role "scheduler" (want one of receiver, poller, consumer, housekeeping)`,
		`roles[2]: duplicate role "receiver"`,
		`consumer.concurrency: must be at least 1`,
		`consumer.heartbeat_renew: must be shorter than consumer.heartbeat_ttl (30s)`,
		`projects[0].name: must use only a-z, 0-9, "-", "_" and "."`,
		`projects[0].base_url: must be an absolute http(s) URL`,
		`projects[0].repo: expected "owner/repo"`,
		`projects[0].trigger_label: "agent-smith:done" is in the lifecycle namespace agent-smith:*`,
		`projects[0].polling.interval: must be at least 1s`,
		`projects[0]: nothing triggers this project: set webhook.secret_env (or secrets) or polling.enabled`,
		`projects[0].pipeline.command: required (an argv list such as [./run.sh, --verbose])`,
		`projects[0].pipeline.timeout: must be positive`,
		`projects[0].pipeline.max_attempts: must be at least 1`,
		`projects[1].platform: unknown platform "bitbucket" (known: ` + known + `)`,
		`projects[1].token: set only one of token, token_env, token_file`,
		`projects[1].webhook.secrets[0]: expected {env: NAME} or {file: PATH}`,
		`projects[1].pipeline.command[0]: must not be empty`,
		`projects[1].pipeline.env: invalid variable name "BAD=NAME"`,
		`projects[1].webhook.secret_env: GH_SECRET is not set`,
		`projects[2].name: duplicate of projects[1]`,
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() joins lines:\n%s", err)
	}
	if strings.Contains(err.Error(), "ghp_pasted_secret_value") {
		t.Error("pasted secret echoed")
	}
	// Load wraps, errors.As still finds the list.
	_, err = Load(testdata + "bad.yaml")
	if !errors.As(err, &errs) || !strings.HasPrefix(err.Error(), "config "+testdata+"bad.yaml: ") {
		t.Errorf("Load: %v", err)
	}
}

const oneProject = `
projects:
  - name: p
    platform: github
    repo: o/r
    polling: {enabled: true}
    pipeline: {command: [run]}
`

func TestSecretForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gh.token"), []byte("ghp_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hook.secret"), []byte("hook-from-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"TOK": "ghp_fromenv", "HOOK": "hook-from-env"}
	for name, tc := range map[string]struct {
		token, webhook string
		wantToken      string
		wantHooks      []string
	}{
		"long env":       {"token: {env: TOK}", "secrets: [{env: HOOK}]", "ghp_fromenv", []string{"hook-from-env"}},
		"long file":      {"token: {file: " + dir + "/gh.token}", "secrets: [{file: " + dir + "/hook.secret}]", "ghp_fromfile", []string{"hook-from-file"}},
		"shorthand env":  {"token_env: TOK", "secret_env: HOOK", "ghp_fromenv", []string{"hook-from-env"}},
		"shorthand file": {"token_file: " + dir + "/gh.token", "secret_file: " + dir + "/hook.secret", "ghp_fromfile", []string{"hook-from-file"}},
		"rotation": {"token_env: TOK", "{secret_env: HOOK, secret_file: " + dir + "/hook.secret, secrets: [{env: TOK}]}",
			"ghp_fromenv", []string{"hook-from-env", "hook-from-file", "ghp_fromenv"}},
	} {
		t.Run(name, func(t *testing.T) {
			webhook := "    webhook: " + tc.webhook
			if !strings.HasPrefix(tc.webhook, "{") {
				webhook = "    webhook:\n      " + tc.webhook
			}
			c := mustParse(t, oneProject+"    "+tc.token+"\n"+webhook+"\n", vars)
			p := c.Projects[0]
			if p.Token.Value() != tc.wantToken {
				t.Errorf("token %q", p.Token.Value())
			}
			var hooks []string
			for _, s := range p.Webhook.Secrets {
				hooks = append(hooks, s.Value())
			}
			if !slices.Equal(hooks, tc.wantHooks) {
				t.Errorf("hooks %q, want %q", hooks, tc.wantHooks)
			}
		})
	}
}

func TestSecretFileRelativeToConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gh.token"), []byte("  ghp_rel \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "agentsmithd.yaml")
	if err := os.WriteFile(cfg, []byte(oneProject+"    token_file: gh.token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Projects[0].Token.Value(); got != "ghp_rel" {
		t.Fatalf("token %q", got)
	}
}

func TestSecretErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for yml, want := range map[string]string{
		"    token_env: TOK\n":                                 "projects[0].token_env: TOK is not set",
		"    token: {env: EMPTY}\n":                            "projects[0].token.env: EMPTY is not set",
		"    token: {file: " + missing + "}\n":                 "projects[0].token.file: cannot read " + missing + ": no such file or directory",
		"    token_file: " + empty + "\n":                      "projects[0].token_file: " + empty + " is empty",
		"    token: {env: A, file: B}\n":                       "projects[0].token: set only one of env and file",
		"    token_env: A\n    token: {env: A}\n":              "projects[0].token: set only one of token, token_env, token_file",
		"    token: {}\n":                                      "projects[0].token: required: {env: NAME} or {file: PATH}, or token_env / token_file",
		"    token: hunter2\n":                                 "projects[0].token: expected {env: NAME} or {file: PATH}; the secret itself does not belong in the config (line 8)",
		"    token_env: A\n    webhook: {secret_env: EMPTY}\n": "projects[0].webhook.secret_env: EMPTY is not set",
	} {
		got := parseErrs(t, oneProject+yml, map[string]string{"EMPTY": "", "A": "a"})
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s\n got %q\nwant %q", yml, got, want)
		}
	}
	got := parseErrs(t, "redis: {password_env: RP}\n"+oneProject+"    token_env: A\n", map[string]string{"A": "a"})
	if !slices.Equal(got, []string{"redis.password_env: RP is not set"}) {
		t.Errorf("redis: %q", got)
	}
}

func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "hook")
	if err := os.WriteFile(file, []byte("s3cret-from-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	values := []string{"s3cret-token", "s3cret-hook", "s3cret-from-file", "s3cret-redis", "s3cret-pasted"}
	vars := map[string]string{"TOK": values[0], "HOOK": values[1], "RP": values[3]}
	good := "redis: {password_env: RP}\n" + oneProject + "    token_env: TOK\n    webhook: {secret_env: HOOK, secret_file: " + file + "}\n"
	c := mustParse(t, good, vars)

	var shown bytes.Buffer
	fmt.Fprintf(&shown, "%v %+v %#v %s", c, *c, c.Projects[0], c.Projects[0].Token)
	core, logs := observer.New(zap.DebugLevel)
	zap.New(core).Info("cfg", zap.Object("token", c.Projects[0].Token), zap.Any("project", c.Projects[0]), zap.Any("redis", c.Redis))
	for _, e := range logs.All() {
		fmt.Fprintf(&shown, " %v", e.ContextMap())
	}

	// A broken variant: every secret resolves, yet other fields fail, and
	// one secret is pasted where a reference belongs.
	bad := strings.Replace(good, "repo: o/r", "repo: nope", 1) + "listen: bad\nconsumer: {concurrency: -2}\n" +
		"projects_extra: " + values[4] + "\n"
	bad = strings.Replace(bad, "redis: {password_env: RP}", "redis: {password: "+values[4]+"}", 1)
	_, err := Parse([]byte(bad), env(vars))
	if err == nil {
		t.Fatal("bad config parsed")
	}
	shown.WriteString(err.Error())
	for _, v := range values {
		if strings.Contains(shown.String(), v) {
			t.Errorf("secret %q shown in:\n%s", v, shown.String())
		}
	}
	if !strings.Contains(shown.String(), "env:TOK") {
		t.Errorf("secret source not named: %s", shown.String())
	}
}

func TestSecretStrings(t *testing.T) {
	t.Parallel()
	s := NewSecret("NAME", "", "v")
	if s.String() != "env:NAME" || fmt.Sprintf("%#v", s) != "config.Secret(env:NAME)" || s.Value() != "v" {
		t.Errorf("%s %#v", s, s)
	}
	if (Secret{File: "/x"}).String() != "file:/x" || (Secret{}).String() != "<unset>" {
		t.Error("String")
	}
}

func TestReadinessAndStuck(t *testing.T) {
	t.Parallel()
	base := "projects:\n  - name: a\n    platform: github\n    repo: o/a\n    token_env: T\n    polling: {enabled: true}\n    pipeline: {command: [run]}\n"
	c, err := Parse([]byte(base+"    readiness: {require_no_open_blockers: true}\n    stuck: {enqueued_after: 5m, comment: true}\n"),
		env(map[string]string{"T": "t"}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Projects[0]
	if !p.Readiness.RequireNoOpenBlockers || p.Stuck != (Stuck{EnqueuedAfter: 5 * time.Minute, InProgressAfter: 2 * time.Hour, Comment: true}) {
		t.Errorf("readiness %+v stuck %+v", p.Readiness, p.Stuck)
	}
	got := parseErrs(t, base+"    readiness: {require_no_open_blockers: 1}\n",
		map[string]string{"T": "t"})
	want := []string{"projects[0].readiness.require_no_open_blockers: expected true or false (line 8)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = parseErrs(t, base+"    stuck: {enqueued_after: -1m, in_progress_after: -2h}\n", map[string]string{"T": "t"})
	want = []string{"projects[0].stuck.enqueued_after: must not be negative", "projects[0].stuck.in_progress_after: must not be negative"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	for yml, want := range map[string][]string{
		"projects:\n  - nme: x\n":                    {`projects[0].nme: unknown field; did you mean "name"? (line 2)`},
		"listen: a\nlisten: b\n":                     {"listen: duplicate field (first at line 1) (line 2)"},
		"roles: receiver\n":                          {"roles: expected a list of strings (line 1)"},
		"projects: {a: 1}\n":                         {"projects: expected a list (line 1)"},
		"consumer: [1]\n":                            {"consumer: expected a mapping (line 1)"},
		"- a\n":                                      {"expected a mapping (line 1)"},
		"listen: [\n":                                {"invalid YAML: line 1: did not find expected node content"},
		"polling: {enabled: 3}\n":                    {"polling: unknown field (line 1)"},
		"projects: [{polling: {enabled: maybe}}]\n":  {"projects[0].polling.enabled: expected true or false (line 1)"},
		"projects: [{pipeline: {env: {A: [x]}}}]\n":  {"projects[0].pipeline.env.A: expected a string (line 1)"},
		"projects: [{pipeline: {command: [[x]]}}]\n": {"projects[0].pipeline.command[0]: expected a string (line 1)"},
	} {
		got := parseErrs(t, yml, nil)
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) || (strings.HasPrefix(want[0], "invalid") && len(got) != 1) {
			t.Errorf("%q\n got %q\nwant prefix %q", yml, got, want)
		}
	}
	if got := parseErrs(t, "", nil); !slices.Equal(got, []string{"projects: at least one project is required"}) {
		t.Errorf("empty: %q", got)
	}
}

func TestMergeKeys(t *testing.T) {
	t.Parallel()
	yml := `
x-common: &common
  platform: github
  token_env: TOK
  polling: {enabled: true}
  pipeline: {command: [run], timeout: 5m}
projects:
  - <<: *common
    name: a
    repo: o/a
  - <<: *common
    name: b
    repo: o/b
    pipeline: {command: [other]}
`
	// x-common is not a field: anchors must live somewhere valid.
	if got := parseErrs(t, yml, map[string]string{"TOK": "t"}); !slices.Equal(got, []string{"x-common: unknown field (line 2)"}) {
		t.Fatalf("got %q", got)
	}
	yml = strings.Replace(yml, "x-common: &common", "projects:\n  - &common\n    name: base\n    repo: o/base", 1)
	yml = strings.Replace(yml, "\n  platform:", "\n    platform:", 1)
	yml = strings.NewReplacer("\n  token_env", "\n    token_env", "\n  polling", "\n    polling", "\n  pipeline: {command: [run]", "\n    pipeline: {command: [run]").Replace(yml)
	yml = strings.Replace(yml, "projects:\n  - <<: *common\n    name: a", "  - <<: *common\n    name: a", 1)
	c := mustParse(t, yml, map[string]string{"TOK": "t"})
	if len(c.Projects) != 3 {
		t.Fatalf("projects %+v", c.Projects)
	}
	a, b := c.Projects[1], c.Projects[2]
	if a.Name != "a" || a.Repo != "o/a" || a.Pipeline.Timeout != 5*time.Minute || a.Token.Value() != "t" || !a.Polling.Enabled {
		t.Errorf("a = %+v", a)
	}
	if b.Name != "b" || !slices.Equal(b.Pipeline.Command, []string{"other"}) || b.Pipeline.Timeout != DefaultPipelineTimeout {
		t.Errorf("b = %+v", b)
	}
}

func TestRolesAndHasRole(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "roles: [consumer]\n"+oneProject+"    token_env: T\n", map[string]string{"T": "t"})
	if !c.HasRole(RoleConsumer) || c.HasRole(RoleReceiver) {
		t.Errorf("roles %v", c.Roles)
	}
}

// Tracker writes carry trackersim's writer header only when the config
// asks for it: by default a tracker client is built with no writer.
func TestTrackerWriterOnlyForTrackersim(t *testing.T) {
	t.Parallel()
	c := mustParse(t, oneProject+"    token_env: T\n", map[string]string{"T": "t"})
	if got := c.TrackerWriter("replica-a"); got != "" {
		t.Errorf("default TrackerWriter = %q, want none", got)
	}
	c = mustParse(t, "trackersim_writer_header: true\n"+oneProject+"    token_env: T\n", map[string]string{"T": "t"})
	if got := c.TrackerWriter("replica-a"); got != "replica-a" {
		t.Errorf("TrackerWriter with trackersim_writer_header = %q, want replica-a", got)
	}
}

func TestValidationRules(t *testing.T) {
	t.Parallel()
	base := oneProject + "    token_env: T\n"
	vars := map[string]string{"T": "t"}
	for yml, want := range map[string]string{
		"consumer: {heartbeat_renew: 2m}\n": "consumer.heartbeat_renew: must be shorter than consumer.heartbeat_ttl (2m0s)",
		"housekeeping: {lease_ttl: -1s}\n":  "housekeeping.lease_ttl: must be positive",
		"redis: {db: -1}\n":                 "redis.db: must not be negative",
		"label_prefix: \"a:b\"\n":           `label_prefix: must not contain ":", spaces or control characters`,
		"webhook: {max_body_bytes: -1}\n":   "webhook.max_body_bytes: must be at least 1",
		"consumer: {tail_bytes: 1000000}\n": "consumer.tail_bytes: must be at most 32768 (the failure comment must fit the tracker's comment limit)",
		"label_prefix: bot\nx: 1\n":         "x: unknown field (line 2)",
		"projects_: 1\n":                    `projects_: unknown field; did you mean "projects"? (line 1)`,
	} {
		got := parseErrs(t, yml+base, vars)
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%q\n got %q\nwant %q", yml, got, want)
		}
	}
	for repl, want := range map[string]string{
		"repo: o/r":        "projects[0].repo: expected \"owner/repo\"",
		"name: p":          "projects[0].name: required",
		"platform: github": "projects[0].platform: required",
	} {
		yml := strings.Replace(base, repl, strings.Split(repl, ":")[0]+": \"\"", 1)
		if repl == "repo: o/r" {
			yml = strings.Replace(base, repl, "repo: o/r/x", 1)
		}
		got := parseErrs(t, yml, vars)
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s\n got %q\nwant %q", repl, got, want)
		}
	}
	got := parseErrs(t, strings.Replace(base, "repo: o/r", "repo: o/r\n    base_url: https://u:pw@ghe.example.com/api/v3/", 1), vars)
	if !slices.Equal(got, []string{"projects[0].base_url: must not contain credentials; use token"}) || strings.Contains(strings.Join(got, ""), "pw") {
		t.Errorf("credentials in url: %q", got)
	}
	// A different prefix frees the default namespace and claims its own.
	c := mustParse(t, "label_prefix: bot\n"+strings.Replace(base, "repo: o/r", "repo: o/r\n    trigger_label: \"agent-smith:go\"", 1), vars)
	if c.Projects[0].TriggerLabel != "agent-smith:go" {
		t.Errorf("trigger %q", c.Projects[0].TriggerLabel)
	}
	got = parseErrs(t, "label_prefix: bot\n"+strings.Replace(base, "repo: o/r", "repo: o/r\n    trigger_label: \"bot:go\"", 1), vars)
	if !slices.Equal(got, []string{`projects[0].trigger_label: "bot:go" is in the lifecycle namespace bot:*`}) {
		t.Errorf("trigger: %q", got)
	}
}

func TestKnownPlatformsExtensible(t *testing.T) {
	t.Parallel()
	platforms.Register(platforms.Descriptor{Name: "testplat"})
	t.Cleanup(func() { platforms.Unregister("testplat") })
	yml := strings.Replace(oneProject, "platform: github", "platform: testplat", 1) + "    token_env: T\n"
	got := parseErrs(t, yml, map[string]string{"T": "t"})
	if !slices.Equal(got, []string{"projects[0].base_url: required"}) {
		t.Fatalf("got %q", got)
	}
	c := mustParse(t, strings.Replace(yml, "repo: o/r", "repo: anything\n    base_url: http://localhost:9000", 1), map[string]string{"T": "t"})
	if c.Projects[0].BaseURL != "http://localhost:9000" {
		t.Errorf("base url %q", c.Projects[0].BaseURL)
	}
}

func TestParseNilLookupUsesEnvironment(t *testing.T) {
	t.Setenv("AGENTSMITH_TEST_TOKEN", "from-os")
	c, err := Parse([]byte(oneProject+"    token_env: AGENTSMITH_TEST_TOKEN\n"), nil)
	if err != nil || c.Projects[0].Token.Value() != "from-os" {
		t.Fatalf("%v", err)
	}
}

// Hostile documents end in errors, not in a hang or a flood of messages.
func TestHostileDocuments(t *testing.T) {
	t.Parallel()
	lol := "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	merge := "m0: &m0 {listen: x}\n"
	for i := 1; i <= 6; i++ {
		merge += fmt.Sprintf("m%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d,", i-1), 10), ","))
	}
	for name, doc := range map[string]string{
		"alias bomb in leaf":  lol + "roles: *f\n",
		"alias bomb in list":  lol + "projects: *f\n",
		"merge bomb":          merge + "consumer: *m6\n",
		"self merge":          "consumer: &c {<<: *c}\n",
		"deep flow":           strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		"many unknown fields": unknownFields(500),
	} {
		_, err := Parse([]byte(doc), nil)
		var errs Errors
		if !errors.As(err, &errs) {
			t.Errorf("%s: want Errors, got %v", name, err)
			continue
		}
		if len(errs) > maxDecodeErrs+20 {
			t.Errorf("%s: %d errors", name, len(errs))
		}
	}
}

func unknownFields(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	return b.String()
}
