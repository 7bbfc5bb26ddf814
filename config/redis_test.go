package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRedisModes(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t", "RP": "data-pw", "SP": "sentinel-pw"}
	base := oneProject + "    token_env: T\n"

	c := mustParse(t, "redis: {addr: \"r:6379\"}\n"+base, vars)
	if c.Redis.Mode != RedisStandalone || !slices.Equal(c.Redis.Addrs, []string{"r:6379"}) {
		t.Errorf("addr: %+v", c.Redis)
	}

	c = mustParse(t, `redis:
  mode: sentinel
  addrs: ["s1:26379", "s2:26379"]
  master_name: mymaster
  username: agentsmith
  password_env: RP
  sentinel_password_env: SP
  tls: {enabled: true, server_name: redis.internal}
`+base, vars)
	r := c.Redis
	if r.Mode != RedisSentinel || len(r.Addrs) != 2 || r.MasterName != "mymaster" || r.Username != "agentsmith" ||
		r.Password.Value() != "data-pw" || r.SentinelPassword.Value() != "sentinel-pw" || !r.TLS.Enabled || r.TLS.ServerName != "redis.internal" {
		t.Errorf("sentinel: %+v", r)
	}

	c = mustParse(t, "redis: {mode: cluster, addrs: [\"n1:7000\", \"n2:7001\"]}\n"+base, vars)
	if c.Redis.Mode != RedisCluster || len(c.Redis.Addrs) != 2 {
		t.Errorf("cluster: %+v", c.Redis)
	}
}

func TestRedisValidation(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t", "SP": "x"}
	base := oneProject + "    token_env: T\n"
	for yml, want := range map[string][]string{
		"redis: {mode: ring}\n":                                {`redis.mode: unknown mode "ring" (want standalone, sentinel or cluster)`},
		"redis: {addr: \"a:1\", addrs: [\"b:2\"]}\n":           {"redis.addrs: set only one of addr and addrs"},
		"redis: {addr: nope}\n":                                {`redis.addr: expected host:port such as "redis:6379"`},
		"redis: {addrs: [\"a:1\", \":2\"]}\n":                  {`redis.addrs[1]: expected host:port such as "redis:6379"`, "redis.addrs: standalone mode takes one address (mode: sentinel or cluster take several)"},
		"redis: {mode: sentinel, addrs: [\"s:26379\"]}\n":      {"redis.master_name: required in sentinel mode"},
		"redis: {mode: sentinel, master_name: m}\n":            {"redis.addrs: required in sentinel mode: the sentinels' host:port"},
		"redis: {mode: cluster, addrs: [\"n:7000\"], db: 2}\n": {"redis.db: must be 0 in cluster mode (a cluster has only database 0)"},
		"redis: {mode: cluster}\n":                             {"redis.addrs: required in cluster mode: one or more nodes' host:port"},
		"redis: {addr: \"a:1\", master_name: m}\n":             {"redis.master_name: only for mode: sentinel"},
		"redis: {addr: \"a:1\", sentinel_password_env: SP}\n":  {"redis.sentinel_password: only for mode: sentinel"},
		"redis: {addr: \"a:1\", tls: {ca_file: ca.pem}}\n":     {"redis.tls.enabled: must be true when other tls fields are set"},
		"redis: {addr: \"a:1\", tls: {enabled: true, cert_file: /nonexistent/c.pem}}\n": {
			"redis.tls: set both cert_file and key_file, or neither",
			"redis.tls.cert_file: cannot read /nonexistent/c.pem: no such file or directory"},
		"redis: {mode: sentinel, addrs: [\"s:1\"], master_name: m, sentinel_password_env: NOPE}\n": {"redis.sentinel_password_env: NOPE is not set"},
	} {
		got := parseErrs(t, yml+base, vars)
		if !slices.Equal(got, want) {
			t.Errorf("%q\n got %q\nwant %q", yml, got, want)
		}
	}
}

func TestRedisTLSFilesRelativeToConfig(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.pem", "c.pem", "k.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("T", "t")
	path := filepath.Join(dir, "agentsmithd.yaml")
	yml := "redis: {addr: \"r:6380\", tls: {enabled: true, ca_file: ca.pem, cert_file: c.pem, key_file: k.pem}}\n" +
		oneProject + "    token_env: T\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.TLS.CAFile != filepath.Join(dir, "ca.pem") || c.Redis.TLS.KeyFile != filepath.Join(dir, "k.pem") {
		t.Errorf("tls: %+v", c.Redis.TLS)
	}
}

func TestReactionsOnlyWherePlatformsHaveThem(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	c := mustParse(t, oneProject+"    token_env: T\n    reactions: true\n", vars)
	if !c.Projects[0].Reactions {
		t.Error("reactions: true not read")
	}
	jira := strings.Replace(oneProject, "platform: github", "platform: jira", 1)
	jira = strings.Replace(jira, "repo: o/r", "repo: PROJ\n    base_url: https://jira.example/\n    jira: {email: a@b.c}", 1)
	got := parseErrs(t, jira+"    token_env: T\n    reactions: true\n", vars)
	if !slices.Contains(got, "projects[0].reactions: only for platforms with issue reactions (github, gitlab)") {
		t.Errorf("jira with reactions: %q", got)
	}
}

func TestProgressModes(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	c := mustParse(t, oneProject+"    token_env: T\n    progress: comment\n", vars)
	if c.Projects[0].Progress != ProgressComment {
		t.Errorf("progress: comment read as %q", c.Projects[0].Progress)
	}
	got := parseErrs(t, oneProject+"    token_env: T\n    progress: comments\n", vars)
	if !slices.Contains(got, `projects[0].progress: "comments" is not a progress mode: "comment" or "off"`) {
		t.Errorf("progress: comments: %q", got)
	}
}
