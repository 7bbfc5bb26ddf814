package daemon_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/readme"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// readmeYAML returns the yaml blocks of README.md and docs/*.md (readme.Load);
// the first one is the smallest complete config (docs/configuration.md,
// "Configuration").
func readmeYAML(t *testing.T) []readme.Block {
	t.Helper()
	md, err := readme.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []readme.Block
	for _, b := range readme.Blocks(md) {
		if b.Lang == "yaml" {
			out = append(out, b)
		}
	}
	if len(out) == 0 || !strings.Contains(out[0].Text, "projects:") {
		t.Fatalf("the README's first yaml block should be the smallest config")
	}
	return out
}

// readmeDir is a config directory holding what the README's examples name:
// the pipeline scripts, TLS files and a GitHub App key; and the environment
// variables they read, set to the test's secrets.
func readmeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"pipelines/implement.sh", "push-wip-branch.sh"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"README pipeline for $AGENTSMITH_TICKET_ID\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ca.pem", "client.pem", "client-key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("stub: validate only checks presence\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "app.pem"), pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_TOKEN", testToken)
	t.Setenv("GH_WEBHOOK_SECRET", testSecret)
	t.Setenv("REDIS_PASSWORD", testRedisPassword)
	t.Setenv("SENTINEL_PASSWORD", testSentinelPassword)
	t.Setenv("GIT_PUSH_TOKEN", testToken)
	t.Setenv("JIRA_TOKEN", testToken)
	t.Setenv("PAYMENTS_HOOK_SECRET", testSecret)
	return dir
}

// readmeConfigs turns each yaml block into complete configs: a complete
// block as it is; each top-level redis: block in place of the smallest
// config's; an indented project fragment merged into its project.
func readmeConfigs(t *testing.T, blocks []readme.Block) map[string][]byte {
	t.Helper()
	var base map[string]any
	if err := yaml.Unmarshal([]byte(blocks[0].Text), &base); err != nil {
		t.Fatalf("%s line %d: %v", blocks[0].File, blocks[0].Line, err)
	}
	out := map[string][]byte{}
	add := func(name string, doc map[string]any) {
		b, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	for _, b := range blocks {
		name := fmt.Sprintf("%s line %d (%s)", b.File, b.Line, b.Section)
		switch {
		case strings.Contains(b.Text, "\nprojects:") || strings.HasPrefix(b.Text, "projects:") || strings.Contains(b.Text, "projects:\n"):
			out[name] = []byte(b.Text)
		case strings.HasPrefix(b.Text, " "): // a project fragment
			var frag map[string]any
			if err := yaml.Unmarshal([]byte(b.Text), &frag); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			doc := cloneDoc(t, base)
			p := doc["projects"].([]any)[0].(map[string]any)
			merge(p, frag)
			if _, app := frag["github_app"]; app {
				delete(p, "token_env") // an app replaces the token
			}
			if _, group := frag["group"]; group {
				delete(p, "repo") // a group replaces the one repository
			}
			add(name, doc)
		default: // top-level redis: examples, one after the other
			for i, chunk := range topLevelChunks(b.Text) {
				var part map[string]any
				if err := yaml.Unmarshal([]byte(chunk), &part); err != nil {
					t.Fatalf("%s chunk %d: %v", name, i, err)
				}
				doc := cloneDoc(t, base)
				maps.Copy(doc, part)
				add(fmt.Sprintf("%s, example %d", name, i+1), doc)
			}
		}
	}
	return out
}

func cloneDoc(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// merge copies src into dst, recursing into maps both have.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// topLevelChunks splits text at each line that starts a top-level key.
func topLevelChunks(text string) []string {
	var chunks []string
	var cur []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && line[0] != ' ' && line[0] != '#' && len(cur) > 0 {
			chunks = append(chunks, strings.Join(cur, "\n"))
			cur = nil
		}
		cur = append(cur, line)
	}
	return append(chunks, strings.Join(cur, "\n"))
}

// Every YAML example in the README and docs/ is a config validate accepts, its
// commands included, with the env vars and files it names present.
func TestReadmeConfigExamplesValidate(t *testing.T) {
	dir := readmeDir(t)
	configs := readmeConfigs(t, readmeYAML(t))
	if len(configs) < 5 {
		t.Fatalf("found %d README configs, want at least 5 (smallest, 3 Redis modes, GitHub App, retries)", len(configs))
	}
	for name, data := range configs {
		file := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(file)
		if err == nil {
			err = cfg.CheckCommands()
		}
		if err != nil {
			t.Errorf("%s does not validate: %v\n%s", name, err, data)
		}
	}
}

// The README's smallest config, written to a file beside its pipeline as a
// reader would, runs a ticket to Done against trackersim. Only what points
// at real services changes: the Redis address, the tracker's base_url and
// the listen address.
func TestReadmeSmallestConfigRunsToDone(t *testing.T) {
	dir := readmeDir(t)
	file := filepath.Join(dir, "agentsmithd.yaml")
	if err := os.WriteFile(file, []byte(readmeYAML(t)[0].Text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckCommands(); err != nil {
		t.Fatal(err)
	}
	p := &cfg.Projects[0]
	e := newEnvFor(t, simcases.GitHub.WithRepo(p.Repo))
	cfg.Redis.Addr, cfg.Redis.Addrs = e.redis.Addr(), []string{e.redis.Addr()}
	cfg.Listen = "127.0.0.1:0"
	cfg.Consumer.WorkDir = filepath.Join(e.dir, "work")
	p.BaseURL = e.simURL + "/github/"
	d := e.startDaemon(cfg)
	e.sim.AddHook(e.pc.Hook("http://"+d.Addr(), testSecret))

	n := e.sim.CreateIssue(e.repo, "Try the README", "", "agent-smith")
	e.waitState(n, 30*time.Second, lifecycle.Done)
	if is, _ := e.sim.Issue(e.repo, n); len(is.Comments) != 0 {
		t.Errorf("a successful run commented: %q", is.Comments[0].Body)
	}
}

// A relative command that is not there fails the ticket with a comment
// that says where it was looked for.
func TestMissingCommandCommentSaysWhereItLooked(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.dir, "conf", "agentsmithd.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	yml := strings.Replace(e.configYAML("replica-a", ""), `command: ["sh", "-c", `, `command: ["./pipelines/not-there.sh", `, 1)
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"E2E_TOKEN": testToken, "E2E_SECRET": testSecret, "E2E_OLD_SECRET": "rotated-out-secret"} {
		t.Setenv(k, v)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	e.startDaemon(cfg)
	n := e.sim.CreateIssue(e.repo, "Run a missing script", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.Failed)
	is, _ := e.sim.Issue(e.repo, n)
	if len(is.Comments) != 1 {
		t.Fatalf("want one failure comment, got %d", len(is.Comments))
	}
	want := "relative commands resolve against the config file's directory " + filepath.Dir(file)
	if c := is.Comments[0].Body; !strings.Contains(c, "failed to start") || !strings.Contains(c, want) {
		t.Errorf("failure comment lacks %q:\n%s", want, c)
	}
}
