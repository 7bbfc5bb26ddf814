package config

import (
	"slices"
	"strings"
	"testing"
)

// pipeline.secrets resolve like every other secret, and print-config names
// their source, never the value.
func TestPipelineSecrets(t *testing.T) {
	t.Parallel()
	yml := oneProject + "    token_env: T\n" + `    pipeline:
      command: [run]
      secrets:
        - {name: GH_TOKEN, from: {env: PIPELINE_GH}}
`
	yml = strings.Replace(yml, "    pipeline: {command: [run]}\n", "", 1)
	c, err := Parse([]byte(yml), env(map[string]string{"T": "t", "PIPELINE_GH": "ghp_pipeline_value"}))
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Projects[0].Pipeline.Secrets
	if len(ps) != 1 || ps[0].Name != "GH_TOKEN" || ps[0].From.Value() != "ghp_pipeline_value" {
		t.Fatalf("secrets %+v", ps)
	}
	if vals := c.Projects[0].SecretValues(); !slices.Contains(vals, "ghp_pipeline_value") || !slices.Contains(vals, "t") {
		t.Errorf("SecretValues = %q: the pipeline secret or the token is missing", vals)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "ghp_pipeline_value") || !strings.Contains(string(out), "PIPELINE_GH") {
		t.Errorf("print-config:\n%s", out)
	}
	for bad, want := range map[string]string{
		"{name: 1X, from: {env: PIPELINE_GH}}":           "projects[0].pipeline.secrets[0].name: must be an environment variable name",
		"{name: AGENTSMITH_X, from: {env: PIPELINE_GH}}": "projects[0].pipeline.secrets[0].name: duplicate",
		"{name: X}":                    "projects[0].pipeline.secrets[0].from: required",
		"{name: X, from: {env: NOPE}}": "NOPE is not set",
	} {
		got := parseErrs(t, strings.Replace(yml, "{name: GH_TOKEN, from: {env: PIPELINE_GH}}", bad, 1), map[string]string{"T": "t", "PIPELINE_GH": "v"})
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("%s: %q, want %q", bad, got, want)
		}
	}
}
