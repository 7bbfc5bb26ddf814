package config

import (
	"strings"
	"testing"
)

// A label prefix of 40 characters with a 32-character stage makes labels
// over GitHub's 50 ("<prefix>:awaiting-approval" is 58, the stage's 79):
// validate names both fields and the limit. GitLab takes 255.
func TestLabelLimitOfThePlatform(t *testing.T) {
	t.Parallel()
	prefix := strings.Repeat("p", 40)
	stage := "s" + strings.Repeat("x", 31)
	yml := func(platform string) string {
		return "label_prefix: " + prefix + `
projects:
  - name: p
    platform: ` + platform + `
    repo: o/r
    token_env: T
    polling: {enabled: true}
    pipeline:
      command: [run]
      stages:
        - name: plan
        - name: ` + stage + "\n"
	}
	vars := map[string]string{"T": "t"}
	errs := strings.Join(parseErrs(t, yml("github"), vars), "\n")
	for _, want := range []string{
		`label_prefix: makes the lifecycle label "` + prefix + `:awaiting-approval", 58 characters: github labels are at most 50 characters (projects[0].platform); shorten label_prefix to at most 32`,
		`projects[0].pipeline.stages[1].name: "` + stage + `" makes the stage label "` + prefix + `:stage/` + stage + `", 79 characters: github labels are at most 50 characters (projects[0].platform)`,
		`projects[0].pipeline.stages[0].name: "plan" makes the stage label`, // 51
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("github: errors lack %q:\n%s", want, errs)
		}
	}
	if c := mustParse(t, yml("gitlab"), vars); c.LabelPrefix != prefix {
		t.Errorf("gitlab: label_prefix %q", c.LabelPrefix)
	}
}

// The default prefix with a 32-character stage name is exactly 50: taken
// on GitHub; one more prefix character is not. A trigger label over the
// limit is refused too.
func TestLabelLimitEdges(t *testing.T) {
	t.Parallel()
	stage := "s" + strings.Repeat("x", 31)
	yml := func(prefix, trigger string) string {
		return "label_prefix: " + prefix + `
projects:
  - name: p
    platform: github
    repo: o/r
    token_env: T
    trigger_label: ` + trigger + `
    polling: {enabled: true}
    pipeline:
      command: [run]
      stages:
        - name: ` + stage + "\n"
	}
	vars := map[string]string{"T": "t"}
	mustParse(t, yml(DefaultLabelPrefix, strings.Repeat("t", 50)), vars)
	errs := strings.Join(parseErrs(t, yml(DefaultLabelPrefix+"x", strings.Repeat("t", 51)), vars), "\n")
	for _, want := range []string{
		`projects[0].pipeline.stages[0].name: "` + stage + `" makes the stage label "agent-smithx:stage/` + stage + `", 51 characters: github labels are at most 50 characters`,
		`projects[0].trigger_label: 51 characters: github labels are at most 50 characters (projects[0].platform)`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
}
