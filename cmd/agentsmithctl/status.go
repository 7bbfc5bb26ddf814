package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
)

func statusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Queue depth and age, runs in flight with heartbeat ages, lease holders, live instances, paused projects",
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
					row(w, r.Ticket, r.Project, inst, r.Attempt, human(s.At.Sub(r.Started)), human(ms(r.HeartbeatAgeMS)))
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
