package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
)

// Report is the flow report of one project (or all) over a window.
type Report struct {
	Project string    `json:"project,omitempty"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Events  int       `json:"events"`
	Tickets int       `json:"tickets"`
	// LeadTime: claim (pending → enqueued) to done/failed, per finished
	// run. QueueWait: enqueued → in-progress. RunTime: in-progress → out.
	LeadTime  Stat `json:"lead_time"`
	QueueWait Stat `json:"queue_wait"`
	RunTime   Stat `json:"run_time"`
	// Retriggered counts tickets claimed more than once in the window
	// (triggered again after finishing, or reclaimed after a dead run).
	Retriggered   int            `json:"retriggered"`
	RetriggerRate float64        `json:"retrigger_rate"`
	Outcomes      map[string]int `json:"outcomes"`
}

// Stat summarises durations (milliseconds in JSON).
type Stat struct {
	Count int   `json:"count"`
	P50MS int64 `json:"p50_ms"`
	P90MS int64 `json:"p90_ms"`
}

func stat(ds []time.Duration) Stat {
	if len(ds) == 0 {
		return Stat{}
	}
	slices.Sort(ds)
	return Stat{Count: len(ds), P50MS: percentile(ds, 50).Milliseconds(), P90MS: percentile(ds, 90).Milliseconds()}
}

// percentile is the nearest-rank percentile of sorted ds.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// buildReport folds the window's events, oldest first.
func buildReport(project string, since, until time.Time, entries []audit.Entry) Report {
	r := Report{Project: project, Since: since, Until: until, Outcomes: map[string]int{}}
	var lead, wait, runT []time.Duration
	claimedAt := map[string]time.Time{}
	claims := map[string]int{}
	tickets := map[string]bool{}
	for _, e := range entries {
		ev := e.Event
		if project != "" && ev.Ref.Project != project {
			continue
		}
		r.Events++
		if ev.Outcome != "" && (ev.Kind == lifecycle.EventTransition || ev.Kind == lifecycle.EventClaim) {
			r.Outcomes[ev.Outcome]++
		}
		if ev.Kind != lifecycle.EventTransition || ev.Ref.ID == "" {
			continue
		}
		k := ev.Ref.Key()
		tickets[k] = true
		switch {
		case ev.From == lifecycle.Pending && ev.To == lifecycle.Enqueued:
			claims[k]++
			if _, ok := claimedAt[k]; !ok {
				claimedAt[k] = ev.At
			}
		case ev.From == lifecycle.Enqueued && ev.To == lifecycle.InProgress:
			if ev.Wait > 0 {
				wait = append(wait, ev.Wait)
			}
		}
		if ev.From == lifecycle.InProgress && ev.Run > 0 {
			runT = append(runT, ev.Run)
		}
		if ev.To.Terminal() {
			if at, ok := claimedAt[k]; ok {
				lead = append(lead, ev.At.Sub(at))
				delete(claimedAt, k)
			}
		}
	}
	r.Tickets = len(tickets)
	for _, n := range claims {
		if n > 1 {
			r.Retriggered++
		}
	}
	if len(claims) > 0 {
		r.RetriggerRate = float64(r.Retriggered) / float64(len(claims))
	}
	r.LeadTime, r.QueueWait, r.RunTime = stat(lead), stat(wait), stat(runT)
	return r
}

// maxSinceDays keeps a day count within time.Duration (~292 years).
const maxSinceDays = 100 * 365

// parseSince reads a Go duration or a number of days ("7d").
func parseSince(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 || n > maxSinceDays {
			return 0, fmt.Errorf("--since %q: want a duration such as 24h or 7d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--since %q: want a duration such as 24h or 7d", s)
	}
	return d, nil
}

func reportCmd(a *app) *cobra.Command {
	var project, since string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Flow report from the audit stream: lead time, queue wait, run time, re-trigger rate, outcomes",
		Long: `Reads the audit stream from --since ago and reports, for --project (default: all):
lead time (claim to done/failed), queue wait (enqueued to in-progress) and run time
(in-progress to its end) as p50/p90, how many tickets were claimed more than once, and counts by
outcome. A run claimed before the window has no lead time in it; the stream holds only its cap.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseSince(since)
			if err != nil {
				return usageErr("%w", err)
			}
			if err := a.load(); err != nil {
				return err
			}
			if project != "" {
				if _, err := a.project(project); err != nil {
					return err
				}
			}
			until := a.clock().UTC()
			from := until.Add(-d)
			var entries []audit.Entry
			if err := audit.NewReader(a.rdb).Since(cmd.Context(), from, func(e audit.Entry) bool {
				entries = append(entries, e)
				return true
			}); err != nil {
				return err
			}
			r := buildReport(project, from, until, entries)
			return a.emit(r, func(w io.Writer) {
				scope := "all projects"
				if project != "" {
					scope = "project " + project
				}
				fmt.Fprintf(w, "Flow report for %s, %s to %s: %d events, %d tickets\n\n", scope,
					from.Format(time.RFC3339), until.Format(time.RFC3339), r.Events, r.Tickets)
				row(w, "METRIC", "COUNT", "P50", "P90")
				for _, m := range []struct {
					name string
					s    Stat
				}{{"lead time", r.LeadTime}, {"queue wait", r.QueueWait}, {"run time", r.RunTime}} {
					if m.s.Count == 0 {
						row(w, m.name, 0, "", "")
						continue
					}
					row(w, m.name, m.s.Count, human(ms(m.s.P50MS)), human(ms(m.s.P90MS)))
				}
				row(w, "re-triggered", r.Retriggered, fmt.Sprintf("%.0f%% of claimed tickets", 100*r.RetriggerRate), "")
				row(w)
				row(w, "OUTCOME", "COUNT")
				for _, o := range slices.Sorted(maps.Keys(r.Outcomes)) {
					row(w, o, r.Outcomes[o])
				}
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project name (default: all)")
	cmd.Flags().StringVar(&since, "since", "24h", "window: a duration such as 24h, 90m or 7d")
	return cmd
}
