package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Retry says which failed attempts run again, after an exponential backoff,
// while the ticket has attempts left (pipeline.max_attempts).
type Retry struct {
	// ExitCodes are the exit statuses that mean "try again" (flaky network,
	// rate limit); any other failure fails the ticket at once.
	ExitCodes []int `yaml:"exit_codes"`
	// OnTimeout retries an attempt stopped by pipeline.timeout.
	OnTimeout bool    `yaml:"on_timeout"`
	Backoff   Backoff `yaml:"backoff"`
}

// Backoff is the wait before retry k: initial × multiplier^(k−1), capped at
// max, then shortened by a random fraction of at most jitter so tickets
// that failed together do not retry together.
type Backoff struct {
	Initial    time.Duration `yaml:"initial"`
	Max        time.Duration `yaml:"max"`
	Multiplier float64       `yaml:"multiplier"`
	Jitter     float64       `yaml:"jitter"` // 0 (none) to 1
}

// Escalate says which failures need a person: the ticket goes Failed at
// once, gets Label, and the failure comment mentions Mention.
type Escalate struct {
	ExitCodes []int    `yaml:"exit_codes"`
	Label     string   `yaml:"label"`
	Mention   []string `yaml:"mention"`
}

// Priority maps labels to queue priorities (lower is served first). A
// ticket with several priority labels gets the highest of them.
type Priority struct {
	Labels  map[string]int `yaml:"labels"`
	Default int            `yaml:"default"`
}

// Priority bounds.
const (
	MinPriority = 1
	MaxPriority = 1000
)

func (pl *Pipeline) applyDefaults() {
	pl.Retry.Backoff.applyDefaults()
	setDefault(&pl.PersistTimeout, DefaultPersistTimeout)
}

func (b *Backoff) applyDefaults() {
	setDefault(&b.Initial, DefaultBackoffInitial)
	setDefault(&b.Max, max(DefaultBackoffMax, b.Initial))
	setDefault(&b.Multiplier, DefaultBackoffFactor)
}

// validateOutcomes checks retry, escalate, concurrency and persistence.
func (pl *Pipeline) validateOutcomes(errs *Errors, path, trigger, labelPrefix string, spaceless bool) {
	r := &pl.Retry
	r.validate(errs, path+".retry")

	e := &pl.Escalate
	ep := path + ".escalate"
	exitCodes(errs, ep+".exit_codes", e.ExitCodes)
	for i, c := range e.ExitCodes {
		if slices.Contains(r.ExitCodes, c) {
			errs.add(fmt.Sprintf("%s.exit_codes[%d]", ep, i), fmt.Sprintf("%d is also in %s.retry.exit_codes: a code either retries or escalates", c, path))
		}
	}
	if len(e.ExitCodes) == 0 && (e.Label != "" || len(e.Mention) > 0) && !errs.has(ep+".exit_codes") {
		errs.add(ep+".exit_codes", "required when escalate.label or escalate.mention is set")
	}
	validateEscalation(errs, ep, e.Label, e.Mention, trigger, labelPrefix, spaceless)

	atLeast(errs, path+".concurrency", pl.Concurrency, 0)
	if len(pl.PersistCommand) > 0 && pl.PersistCommand[0] == "" {
		errs.add(path+".persist_command[0]", "must not be empty")
	}
	positive(errs, path+".persist_timeout", pl.PersistTimeout)
}

// validate checks retry rules at path (a pipeline's or a stage's retry).
func (r *Retry) validate(errs *Errors, path string) {
	exitCodes(errs, path+".exit_codes", r.ExitCodes)
	b := &r.Backoff
	positive(errs, path+".backoff.initial", b.Initial)
	if b.Max < b.Initial {
		errs.add(path+".backoff.max", fmt.Sprintf("must be at least retry.backoff.initial (%s)", b.Initial))
	}
	// Written as negations so NaN (".nan" in YAML) fails too.
	if !(b.Multiplier >= 1 && b.Multiplier <= 1000) {
		errs.add(path+".backoff.multiplier", "must be from 1 to 1000")
	}
	if !(b.Jitter >= 0 && b.Jitter <= 1) {
		errs.add(path+".backoff.jitter", "must be between 0 and 1")
	}
}

func (p *Priority) validate(errs *Errors, path, labelPrefix string) {
	inRange := func(field string, v int) {
		if v < MinPriority || v > MaxPriority {
			errs.add(field, fmt.Sprintf("must be between %d (served first) and %d", MinPriority, MaxPriority))
		}
	}
	inRange(path+".default", p.Default)
	for _, l := range slices.Sorted(maps.Keys(p.Labels)) {
		if msg := checkLabel(l, labelPrefix, false); msg != "" {
			errs.add(fmt.Sprintf("%s.labels[%q]", path, l), msg)
			continue
		}
		inRange(fmt.Sprintf("%s.labels[%q]", path, l), p.Labels[l])
	}
}

// checkLabel returns a complaint about a label the daemon adds or reads
// besides the lifecycle labels, or "".
func checkLabel(l, labelPrefix string, spaceless bool) string {
	switch {
	case strings.TrimSpace(l) == "":
		return "must not be blank"
	case strings.HasPrefix(l, labelPrefix+":"):
		return fmt.Sprintf("%q is in the lifecycle namespace %s:*", l, labelPrefix)
	case spaceless && strings.ContainsFunc(l, unicode.IsSpace):
		return "Jira labels cannot contain spaces"
	}
	return ""
}

func exitCodes(errs *Errors, path string, codes []int) {
	for i, c := range codes {
		switch {
		case c < 1 || c > 255:
			errs.add(fmt.Sprintf("%s[%d]", path, i), "must be an exit status from 1 to 255")
		case slices.Index(codes, c) < i:
			errs.add(fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("duplicate %d", c))
		}
	}
}

// validateEscalation checks an escalation's label and mention handles at
// path (pipeline.escalate's, a gate's).
func validateEscalation(errs *Errors, path, label string, mention []string, trigger, labelPrefix string, spaceless bool) {
	if label != "" {
		switch msg := checkLabel(label, labelPrefix, spaceless); {
		case msg != "":
			errs.add(path+".label", msg)
		case label == trigger:
			errs.add(path+".label", "must differ from trigger_label (an escalated ticket would be claimed again)")
		}
	}
	for i, m := range mention {
		if strings.TrimSpace(m) == "" || strings.ContainsFunc(m, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
			errs.add(fmt.Sprintf("%s.mention[%d]", path, i), "must be one handle without spaces, such as @alice")
		}
	}
}
