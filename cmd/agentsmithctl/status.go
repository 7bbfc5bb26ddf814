package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
)

func statusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Queue depth and age, runs in flight with heartbeat ages, outcomes waiting for the tracker, tickets awaiting approval, lease holders, live instances, paused projects",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.load(); err != nil {
				return err
			}
			s, err := ops.Read(cmd.Context(), a.rdb, a.queue(), ops.ReadConfig{HeartbeatTTL: a.cfg.Consumer.HeartbeatTTL, Clock: a.clock})
			if err != nil {
				return err
			}
			return a.emit(s, func(w io.Writer) {
				oldest := "-"
				if s.Queue.Oldest != "" {
					oldest = human(ms(s.Queue.OldestAgeMS)) + " (" + s.Queue.Oldest + ")"
				}
				row(w, "QUEUE", "DEPTH", "OLDEST", "DELAYED", "PROCESSING")
				row(w, "", s.Queue.Depth, oldest, s.Queue.Delayed, s.Queue.Processing)
				row(w)
				row(w, "RUN", "PROJECT", "INSTANCE", "ATTEMPT", "RUNNING FOR", "HEARTBEAT AGE")
				for _, r := range s.Runs {
					inst := r.Instance
					if !r.InstanceAlive {
						inst += " (gone)"
					}
					running := human(s.At.Sub(r.Started))
					if !r.Ended.IsZero() {
						running = "ended " + human(s.At.Sub(r.Ended)) + " ago, outcome waiting for the tracker"
					}
					row(w, r.Ticket, r.Project, inst, r.Attempt, running, human(ms(r.HeartbeatAgeMS)))
				}
				if len(s.Outcomes) > 0 {
					// Pipelines that ended: their Done or Failed is written
					// from the record when the tracker answers.
					row(w)
					row(w, "OUTCOME WAITING", "TO", "INSTANCE", "ATTEMPT", "WAITING SINCE", "FOR", "TRIES", "LAST ERROR")
					for _, o := range s.Outcomes {
						row(w, o.Ticket, o.To, o.Instance, o.Attempt, o.Recorded.UTC().Format(time.RFC3339), human(ms(o.AgeMS)), o.Tries, strings.Join(strings.Fields(o.LastError), " "))
					}
				}
				if len(s.Refusals) > 0 {
					// Tickets backing off after a tracker's refusal for good.
					row(w)
					row(w, fmt.Sprintf("REFUSED (%d)", s.RefusalsTotal), "OP", "STATUS", "SINCE", "NEXT TRY", "TOLD")
					for _, r := range s.Refusals {
						told := "no"
						if r.Told {
							told = "yes"
						}
						row(w, r.Ticket, r.Op, r.Status, r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339), told)
					}
				}
				if len(s.Awaiting) > 0 {
					// Tickets parked at an approval gate (the parked index):
					// agentsmithctl approve|reject decides them.
					row(w)
					row(w, fmt.Sprintf("AWAITING APPROVAL (%d)", s.AwaitingTotal), "PROJECT", "STAGE", "SINCE", "FOR", "ESCALATED", "TITLE")
					for _, e := range s.Awaiting {
						escalated := "no"
						if e.Escalated {
							escalated = "yes"
						}
						row(w, e.Ref.String(), e.Ref.Project, e.Stage, e.Since.UTC().Format(time.RFC3339), human(s.At.Sub(e.Since)), escalated, e.Title)
					}
				}
				row(w)
				row(w, "LEASE", "HOLDER", "EXPIRES IN")
				for _, l := range s.Leases {
					exp := "-"
					if l.Holder != "" {
						exp = human(ms(l.ExpiresInMS))
					}
					row(w, l.Role, l.Holder, exp)
				}
				if len(s.Paused) > 0 {
					row(w)
					row(w, "PAUSED", "BY", "SINCE")
					for _, p := range s.Paused {
						row(w, p.Project, p.By, human(s.At.Sub(p.At)))
					}
				}
				row(w)
				row(w, "INSTANCE", "EXPIRES IN")
				for _, i := range s.Instances {
					row(w, i.ID, human(ms(i.ExpiresInMS)))
				}
			})
		},
	}
}
