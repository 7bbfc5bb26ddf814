package config

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// checkLabelLimit refuses a label the project's platform could not hold:
// every label the daemon writes for the project (its trigger label, the
// lifecycle labels "<label_prefix>:<state>", ":approved", ":rejected", and
// each stage's "<label_prefix>:stage/<name>") must be at most
// d.LabelLimit characters, or every write of it is refused (GitHub: 422
// "name is too long (maximum is 50 characters)"). The default prefix
// "agent-smith" with a 32-character stage name makes exactly 50.
func checkLabelLimit(errs *Errors, path string, d platforms.Descriptor, p *Project, labelPrefix string) {
	limit := d.LabelLimit
	if limit <= 0 {
		return
	}
	tooLong := func(label string) (int, bool) {
		n := utf8.RuneCountInString(label)
		return n, n > limit
	}
	limitText := fmt.Sprintf("%s labels are at most %d characters (%s.platform)", d.Name, limit, path)
	if n, over := tooLong(p.TriggerLabel); over && !errs.has(path+".trigger_label") {
		errs.add(path+".trigger_label", fmt.Sprintf("%d characters: %s", n, limitText))
	}
	if labelPrefix == "" || errs.has("label_prefix") {
		return
	}
	labels := lifecycle.Labels{Prefix: labelPrefix}
	longest := labels.Approved()
	for _, l := range append([]string{labels.Rejected()}, lifecycleLabels(labels)...) {
		if utf8.RuneCountInString(l) > utf8.RuneCountInString(longest) {
			longest = l
		}
	}
	if n, over := tooLong(labelPrefix); over {
		errs.add("label_prefix", fmt.Sprintf("%d characters: %s", n, limitText))
		return
	}
	if n, over := tooLong(longest); over {
		errs.add("label_prefix", fmt.Sprintf("makes the lifecycle label %q, %d characters: %s; shorten label_prefix to at most %d",
			longest, n, limitText, limit-(n-utf8.RuneCountInString(labelPrefix))))
	}
	for i, s := range p.Pipeline.Stages {
		if !lifecycle.ValidStageName(s.Name) {
			continue // refused as a name already
		}
		if n, over := tooLong(labels.Stage(s.Name)); over {
			errs.add(fmt.Sprintf("%s.pipeline.stages[%d].name", path, i), fmt.Sprintf("%q makes the stage label %q, %d characters: %s; shorten the name or label_prefix",
				s.Name, labels.Stage(s.Name), n, limitText))
		}
	}
}

// lifecycleLabels are the labels of every lifecycle state under labels'
// prefix.
func lifecycleLabels(labels lifecycle.Labels) []string {
	out := make([]string, len(lifecycle.AllStates))
	for i, s := range lifecycle.AllStates {
		out[i] = labels.Label(s)
	}
	return out
}
