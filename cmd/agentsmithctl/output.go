package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
)

// emit writes v as indented JSON with -o json, else calls table.
func (a *app) emit(v any, table func(w io.Writer)) error {
	if a.output == "json" {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func row(w io.Writer, cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
		if s[i] == "" {
			s[i] = "-"
		}
	}
	fmt.Fprintln(w, strings.Join(s, "\t"))
}

// human rounds a duration for a table.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "gone"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// transition renders an event's state change ("enqueued → in-progress"),
// or, for events that changed no label, the state the ticket was in.
func transition(ev lifecycle.Event) string {
	switch ev.Kind {
	case lifecycle.EventTransition:
		return ev.From.String() + " → " + ev.To.String()
	case lifecycle.EventClaim, lifecycle.EventStuck:
		return "(" + ev.From.String() + ")" // a claim that changed nothing, or a flag
	}
	return ""
}

func eventHeader(w io.Writer) {
	row(w, "AT", "TICKET", "KIND", "TRANSITION", "OUTCOME", "ATTEMPT", "INSTANCE", "SOURCE", "REASON")
}

func eventRow(w io.Writer, e audit.Entry) {
	ev := e.Event
	attempt := ""
	if ev.Attempt > 0 {
		attempt = fmt.Sprint(ev.Attempt)
	}
	ticket := ""
	if ev.Ref.ID != "" {
		ticket = ev.Ref.String()
	}
	row(w, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), ticket, ev.Kind, transition(ev), ev.ShownOutcome(), attempt,
		ev.Instance, ev.Source, ev.ShownReason())
}
