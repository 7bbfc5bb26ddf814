package config

import (
	"strings"
	"testing"
)

// The sandbox block: defaults, short and long allow rules, limits layered
// stage over project over daemon, and what validation refuses.
func TestSandboxConfig(t *testing.T) {
	vars := map[string]string{"T": "t", "GH": "ghp_pipeline", "RP": "pw"}
	parse := func(t *testing.T, doc string) (*Config, error) {
		t.Helper()
		return Parse([]byte(doc), env(vars))
	}
	t.Run("defaults and layers", func(t *testing.T) {
		c, err := parse(t, `
sandbox:
  limits: {memory: 2GiB}
  network: {allow: ["registry.npmjs.org", "*.githubusercontent.com:443", {host: api.github.com, methods: [GET]}, "10.1.2.3:8080"]}
projects:
  - name: p
    platform: github
    repo: o/r
    token_env: T
    polling: {enabled: true}
    pipeline:
      command: [run]
      sandbox: {limits: {processes: 64}, network: {allow: [api.anthropic.com]}}
      secrets: [{name: GH_TOKEN, from: {env: GH}, inject: {host: api.github.com, header: Authorization}}]
      stages:
        - {name: plan, command: [plan], sandbox: {limits: {memory: 512MiB}}}
        - {name: build, command: [build]}
`)
		if err != nil {
			t.Fatal(err)
		}
		s := c.Sandbox
		if !s.On() || s.UIDRange.First != DefaultUIDFirst || s.Limits.CPU != DefaultSandboxCPU || s.Limits.Processes != DefaultSandboxProcesses {
			t.Errorf("daemon sandbox = %+v", s)
		}
		allow := s.Network.Allow
		if len(allow) != 4 || allow[1].Host != "*.githubusercontent.com" || len(allow[1].Ports) != 1 || allow[1].Ports[0] != 443 ||
			allow[2].Methods[0] != "GET" || allow[3].Host != "10.1.2.3" || allow[3].Ports[0] != 8080 {
			t.Errorf("allow = %+v", allow)
		}
		pl := c.Projects[0].Pipeline
		stage := pl.Stages[0].Sandbox.Limits.Over(pl.Sandbox.Limits).Over(s.Limits)
		if stage.MemoryBytes() != 512<<20 || stage.Processes != 64 || stage.CPU != 2 {
			t.Errorf("plan stage limits = %+v", stage)
		}
		if got := pl.Stages[1].Sandbox.Limits.Over(pl.Sandbox.Limits).Over(s.Limits); got.MemoryBytes() != 2<<30 {
			t.Errorf("build stage limits = %+v", got)
		}
		if inj := pl.Secrets[0].Inject; inj == nil || inj.Host != "api.github.com" || inj.Header != "Authorization" {
			t.Errorf("inject = %+v", inj)
		}
	})
	refused := []struct{ name, doc, path, msg string }{
		{"off without a Redis password", "sandbox: {mode: off}\n" + oneProject, "sandbox.mode", "password"},
		{"unknown mode", "sandbox: {mode: auto}\n" + oneProject, "sandbox.mode", `want "on" or "off"`},
		{"bad memory", "sandbox: {limits: {memory: lots}}\n" + oneProject, "sandbox.limits.memory", "4GiB"},
		{"tiny memory", "sandbox: {limits: {memory: 1MiB}}\n" + oneProject, "sandbox.limits.memory", "16MiB"},
		{"few processes", "sandbox: {limits: {processes: 2}}\n" + oneProject, "sandbox.limits.processes", "8 or more"},
		{"bare wildcard", "sandbox: {network: {allow: ['*']}}\n" + oneProject, "sandbox.network.allow[0].host", "want a host"},
		{"url as host", "sandbox: {network: {allow: [{host: 'https://x.example'}]}}\n" + oneProject, "sandbox.network.allow[0].host", "without scheme"},
		{"wildcard tld", "sandbox: {network: {allow: ['*.com']}}\n" + oneProject, "sandbox.network.allow[0].host", "wildcard"},
		{"unspecified IP", "sandbox: {network: {allow: ['0.0.0.0:80']}}\n" + oneProject, "sandbox.network.allow[0].host", "unspecified"},
		{"uid range among accounts", "sandbox: {uid_range: {first: 1000, count: 10}}\n" + oneProject, "sandbox.uid_range", "65536"},
		{"bad port", "sandbox: {network: {allow: ['x.example:0']}}\n" + oneProject, "sandbox.network.allow[0].ports", "1-65535"},
		{"lower-case method", "sandbox: {network: {allow: [{host: x.example, methods: [get]}]}}\n" + oneProject, "sandbox.network.allow[0].methods", "upper-case"},
		{"relative mount", "sandbox: {mounts: [{path: opt}]}\n" + oneProject, "sandbox.mounts[0].path", "absolute"},
		{"mount of /", "sandbox: {mounts: [{path: /}]}\n" + oneProject, "sandbox.mounts[0].path", "whole host"},
		{"work dir under /opt", "consumer: {work_dir: /opt/agentsmith/work}\n" + oneProject, "consumer.work_dir", "each other's work dirs"},
		{"run_as with the sandbox", strings.Replace(oneProject, "{command: [run]}", "{command: [run], run_as: nobody}", 1), "projects[0].pipeline.run_as", "uid of its own"},
		{"inject with the sandbox off", "sandbox: {mode: off}\nredis: {password_env: RP}\n" + strings.Replace(oneProject, "{command: [run]}",
			"{command: [run], secrets: [{name: GH_TOKEN, from: {env: GH}, inject: {host: api.github.com, header: Authorization}}]}", 1),
			"projects[0].pipeline.secrets[0].inject", "needs the sandbox"},
		{"inject to a wildcard", strings.Replace(oneProject, "{command: [run]}",
			"{command: [run], secrets: [{name: GH_TOKEN, from: {env: GH}, inject: {host: '*.github.com', header: Authorization}}]}", 1),
			"projects[0].pipeline.secrets[0].inject.host", "one exact host"},
		{"hosts on a stage", strings.Replace(oneProject, "{command: [run]}",
			"{stages: [{name: a, command: [a], sandbox: {network: {allow: [x.example]}}}]}", 1),
			"projects[0].pipeline.stages[0].sandbox", "limits only"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, strings.Replace(tc.doc, "    pipeline:", "    token_env: T\n    pipeline:", 1))
			if err == nil || !strings.Contains(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("want %s refused with %q, got %v", tc.path, tc.msg, err)
			}
		})
	}
	t.Run("off with a Redis password", func(t *testing.T) {
		if _, err := parse(t, "sandbox: {mode: off}\nredis: {password_env: RP}\n"+strings.Replace(oneProject, "    pipeline:", "    token_env: T\n    pipeline:", 1)); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"4GiB": 4 << 30, "512MiB": 512 << 20, "1048576": 1 << 20, "1.5GiB": 3 << 29, "2GB": 2e9, "unlimited": 0, "0": 0} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1GiB", "1e400", "4 parsecs", "NaN"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted", in)
		}
	}
}
