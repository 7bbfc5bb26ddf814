package main

import (
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
)

// history and events print a claim that found its ticket already queued
// as an ignored duplicate, in words.
func TestEventRowWordsADuplicateTrigger(t *testing.T) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	eventRow(w, audit.Entry{Event: lifecycle.Event{Kind: lifecycle.EventClaim, From: lifecycle.Enqueued,
		Outcome: string(lifecycle.NotEligible), Reason: "state is enqueued", Source: "webhook"}})
	_ = w.Flush()
	out := b.String()
	if !strings.Contains(out, "ignored") || !strings.Contains(out, "already enqueued (duplicate trigger ignored)") {
		t.Errorf("row %q does not word the duplicate trigger", out)
	}
	if strings.Contains(out, "not_eligible") || strings.Contains(out, "state is enqueued") {
		t.Errorf("row %q shows the duplicate trigger as a refusal", out)
	}
}
