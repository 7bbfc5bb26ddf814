package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const staged = `
projects:
  - name: p
    platform: github
    repo: o/r
    token_env: T
    polling: {enabled: true}
    pipeline:
      command: [run]
      timeout: 10m
      max_attempts: 4
      retry: {exit_codes: [75]}
      stages:
        - name: plan
          command: [plan, --dry]
          timeout: 2m
          max_attempts: 1
        - name: implement
          retry: {exit_codes: [3], backoff: {initial: 5s}}
        - name: test
`

func TestStagesParseWithDefaults(t *testing.T) {
	t.Parallel()
	pl := mustParse(t, staged, map[string]string{"T": "t"}).Projects[0].Pipeline
	if got := pl.StageNames(); !slices.Equal(got, []string{"plan", "implement", "test"}) {
		t.Fatalf("StageNames = %q", got)
	}
	plan, impl, test := pl.Stages[0], pl.Stages[1], pl.Stages[2]
	if !slices.Equal(plan.Command, []string{"plan", "--dry"}) || plan.Timeout != 2*time.Minute || plan.MaxAttempts != 1 {
		t.Errorf("plan %+v: its own command, timeout and attempts", plan)
	}
	if !slices.Equal(impl.Command, []string{"run"}) || impl.Timeout != 10*time.Minute || impl.MaxAttempts != 4 {
		t.Errorf("implement %+v: the pipeline's command, timeout and attempts", impl)
	}
	if !slices.Equal(impl.Retry.ExitCodes, []int{3}) || impl.Retry.Backoff.Initial != 5*time.Second || impl.Retry.Backoff.Multiplier != DefaultBackoffFactor {
		t.Errorf("implement retry %+v: its own, backoff defaults filled", impl.Retry)
	}
	if !slices.Equal(test.Retry.ExitCodes, []int{75}) || test.Retry.Backoff != pl.Retry.Backoff {
		t.Errorf("test retry %+v: the pipeline's %+v", test.Retry, pl.Retry)
	}
	// A stage's defaults are copies: changing one changes no other.
	test.Retry.ExitCodes[0] = 1
	test.Command[0] = "x"
	if pl.Retry.ExitCodes[0] != 75 || pl.Command[0] != "run" {
		t.Error("a stage shares its defaults' slices with the pipeline")
	}
	if got := mustParse(t, oneProject+"    token_env: T\n", map[string]string{"T": "t"}).Projects[0].Pipeline.StageNames(); got != nil {
		t.Errorf("a project without stages has stages %q", got)
	}
}

func TestStagesValidation(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(staged, "name: implement", "name: Implement", 1)
	bad = strings.Replace(bad, "- name: test", "- name: plan\n          timeout: -1s\n          max_attempts: -1\n        - command: ['']", 1)
	errs := strings.Join(parseErrs(t, bad, map[string]string{"T": "t"}), "\n")
	for _, want := range []string{
		`projects[0].pipeline.stages[1].name: "Implement": must be a lower-case letter`,
		`projects[0].pipeline.stages[2].name: "plan" is also the name of stages[0]: stage names are unique`,
		`projects[0].pipeline.stages[2].timeout`,
		`projects[0].pipeline.stages[2].max_attempts`,
		`projects[0].pipeline.stages[3].name: required`,
		`projects[0].pipeline.stages[3].command[0]: must not be empty`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
}
