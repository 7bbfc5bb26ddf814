package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const outcomes = `
projects:
  - name: p
    platform: github
    repo: o/r
    token_env: T
    polling: {enabled: true}
    token_concurrency: 3
    priority:
      labels: {"priority:high": 1, "priority:low": 10}
      default: 4
    pipeline:
      command: [run]
      max_attempts: 4
      concurrency: 2
      persist_command: [git, push, origin, HEAD]
      retry:
        exit_codes: [75, 3]
        on_timeout: true
        backoff: {initial: 2s, max: 1m, multiplier: 3, jitter: 0.25}
      escalate:
        exit_codes: [42]
        label: needs-human
        mention: ["@alice", "@bob"]
`

func TestRetryEscalatePriorityLimits(t *testing.T) {
	t.Parallel()
	c := mustParse(t, outcomes, map[string]string{"T": "t"})
	p := c.Projects[0]
	pl := p.Pipeline
	if !slices.Equal(pl.Retry.ExitCodes, []int{75, 3}) || !pl.Retry.OnTimeout ||
		pl.Retry.Backoff != (Backoff{Initial: 2 * time.Second, Max: time.Minute, Multiplier: 3, Jitter: 0.25}) {
		t.Errorf("retry %+v", pl.Retry)
	}
	if !slices.Equal(pl.Escalate.ExitCodes, []int{42}) || pl.Escalate.Label != "needs-human" || !slices.Equal(pl.Escalate.Mention, []string{"@alice", "@bob"}) {
		t.Errorf("escalate %+v", pl.Escalate)
	}
	if pl.Concurrency != 2 || p.TokenConcurrency != 3 || !slices.Equal(pl.PersistCommand, []string{"git", "push", "origin", "HEAD"}) ||
		pl.PersistTimeout != DefaultPersistTimeout {
		t.Errorf("limits/persist %+v", p)
	}
	if p.Priority.Default != 4 || p.Priority.Labels["priority:high"] != 1 || p.Priority.Labels["priority:low"] != 10 {
		t.Errorf("priority %+v", p.Priority)
	}
}

func TestRetryDefaults(t *testing.T) {
	t.Parallel()
	c := mustParse(t, oneProject+"    token_env: T\n", map[string]string{"T": "t"})
	p := c.Projects[0]
	if b := p.Pipeline.Retry.Backoff; b != (Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, Multiplier: 2}) {
		t.Errorf("backoff defaults %+v", b)
	}
	if len(p.Pipeline.Retry.ExitCodes) != 0 || p.Pipeline.Retry.OnTimeout || p.Priority.Default != DefaultPriority || p.Pipeline.Concurrency != 0 {
		t.Errorf("a project without retry config must fail at once, at the default priority, unlimited: %+v", p)
	}
	// An initial backoff above the default max raises the max with it.
	c = mustParse(t, strings.Replace(outcomes, "initial: 2s, max: 1m,", "initial: 20m,", 1), map[string]string{"T": "t"})
	if b := c.Projects[0].Pipeline.Retry.Backoff; b.Max != 20*time.Minute {
		t.Errorf("max %s, want raised to initial", b.Max)
	}
}

func TestRetryEscalatePriorityErrors(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	for from, want := range map[string][]string{
		"exit_codes: [75, 3]":   {"projects[0].pipeline.retry.exit_codes[0]: must be an exit status from 1 to 255", "projects[0].pipeline.retry.exit_codes[2]: duplicate 3"},
		"exit_codes: [42]":      {"projects[0].pipeline.escalate.exit_codes[0]: 75 is also in projects[0].pipeline.retry.exit_codes: a code either retries or escalates"},
		"multiplier: 3":         {"projects[0].pipeline.retry.backoff.multiplier: must be from 1 to 1000"},
		"jitter: 0.25":          {"projects[0].pipeline.retry.backoff.jitter: must be between 0 and 1"},
		"max: 1m":               {"projects[0].pipeline.retry.backoff.max: must be at least retry.backoff.initial (2s)"},
		"label: needs-human":    {`projects[0].pipeline.escalate.label: "agent-smith:x" is in the lifecycle namespace agent-smith:*`},
		`mention: ["@alice", `:  {"projects[0].pipeline.escalate.mention[0]: must be one handle without spaces, such as @alice"},
		"concurrency: 2":        {"projects[0].pipeline.concurrency: must be at least 0"},
		"token_concurrency: 3":  {"projects[0].token_concurrency: must be at least 0"},
		`"priority:low": 10`:    {`projects[0].priority.labels["priority:low"]: must be between 1 (served first) and 1000`},
		"default: 4":            {"projects[0].priority.default: must be between 1 (served first) and 1000"},
		"persist_command: [git": {"projects[0].pipeline.persist_command[0]: must not be empty"},
	} {
		to := map[string]string{
			"exit_codes: [75, 3]":   "exit_codes: [0, 3, 3]",
			"exit_codes: [42]":      "exit_codes: [75]\n        label: needs-human",
			"multiplier: 3":         "multiplier: 0.5",
			"jitter: 0.25":          "jitter: 1.5",
			"max: 1m":               "max: 1s",
			"label: needs-human":    `label: "agent-smith:x"`,
			`mention: ["@alice", `:  `mention: ["al ice", `,
			"concurrency: 2":        "concurrency: -1",
			"token_concurrency: 3":  "token_concurrency: -3",
			`"priority:low": 10`:    `"priority:low": 1001`,
			"default: 4":            "default: 1001",
			"persist_command: [git": `persist_command: ["", git`,
		}[from]
		yml := strings.Replace(outcomes, from, to, 1)
		if from == "exit_codes: [42]" {
			yml = strings.Replace(yml, "        label: needs-human\n        label: needs-human", "        label: needs-human", 1)
		}
		if from == "concurrency: 2" {
			yml = strings.Replace(outcomes, "      concurrency: 2", "      concurrency: -1", 1)
		}
		if got := parseErrs(t, yml, vars); !slices.Equal(got, want) {
			t.Errorf("%s → %s\n got %q\nwant %q", from, to, got, want)
		}
	}
	for _, bad := range []string{"multiplier: .nan", "multiplier: .inf", "jitter: .nan"} {
		field := strings.Split(bad, ":")[0]
		got := parseErrs(t, strings.Replace(outcomes, field+": "+map[string]string{"multiplier": "3", "jitter": "0.25"}[field], bad, 1), vars)
		if len(got) != 1 || !strings.HasPrefix(got[0], "projects[0].pipeline.retry.backoff."+field+": must be") {
			t.Errorf("%s: %q", bad, got)
		}
	}
	got := parseErrs(t, strings.Replace(outcomes, "jitter: 0.25", "jitter: lots", 1), vars)
	if len(got) != 1 || !strings.HasPrefix(got[0], "projects[0].pipeline.retry.backoff.jitter: expected a number") {
		t.Errorf("jitter type: %q", got)
	}
	got = parseErrs(t, strings.Replace(outcomes, "exit_codes: [42]", "exit_codes: [x]", 1), vars)
	if len(got) != 1 || !strings.HasPrefix(got[0], "projects[0].pipeline.escalate.exit_codes: expected a list of integers") {
		t.Errorf("exit code type: %q", got)
	}
	got = parseErrs(t, strings.Replace(outcomes, "      escalate:\n        exit_codes: [42]\n", "      escalate:\n", 1), vars)
	if !slices.Equal(got, []string{"projects[0].pipeline.escalate.exit_codes: required when escalate.label or escalate.mention is set"}) {
		t.Errorf("escalate without codes: %q", got)
	}
}
