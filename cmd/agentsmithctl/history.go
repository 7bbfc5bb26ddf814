package main

import (
	"encoding/json"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
)

func historyCmd(a *app) *cobra.Command {
	var project string
	var limit int
	cmd := &cobra.Command{
		Use:   "history TICKET",
		Short: "A ticket's events from the audit stream, oldest first",
		Long: `Scans the audit stream (agentsmith:audit) newest first for the ticket's events: one
XREVRANGE per 500 entries, so up to 200 round trips at the default cap of 100,000 entries.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ref, err := a.loadTicket(argv[0], project)
			if err != nil {
				return err
			}
			entries, err := audit.NewReader(a.rdb).History(cmd.Context(), ref, timeZero, limit)
			if err != nil {
				return err
			}
			if len(entries) == 0 {
				return notFound("no events for %s in the audit stream", ref)
			}
			return a.emit(entries, func(w io.Writer) {
				eventHeader(w)
				for _, e := range entries {
					eventRow(w, e)
				}
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most the newest N events (0: all)")
	return cmd
}

func eventsCmd(a *app) *cobra.Command {
	var follow bool
	var n int
	cmd := &cobra.Command{
		Use:   "events",
		Short: "The newest audit events; --follow keeps printing new ones (one JSON object per line with -o json)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.load(); err != nil {
				return err
			}
			rd := audit.NewReader(a.rdb)
			recent, err := rd.Recent(cmd.Context(), n)
			if err != nil {
				return err
			}
			after := "0-0"
			if len(recent) > 0 {
				after = recent[0].ID
			}
			for i, j := 0, len(recent)-1; i < j; i, j = i+1, j-1 {
				recent[i], recent[j] = recent[j], recent[i]
			}
			if !follow {
				return a.emit(recent, func(w io.Writer) {
					eventHeader(w)
					for _, e := range recent {
						eventRow(w, e)
					}
				})
			}
			// Following streams: JSON lines, or table rows flushed one by one.
			var print func(audit.Entry) error
			if a.output == "json" {
				enc := json.NewEncoder(a.out)
				print = func(e audit.Entry) error { return enc.Encode(e) }
			} else {
				tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
				eventHeader(tw)
				print = func(e audit.Entry) error { eventRow(tw, e); return tw.Flush() }
			}
			for _, e := range recent {
				if err := print(e); err != nil {
					return err
				}
			}
			return rd.Follow(cmd.Context(), after, print)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they are appended (until interrupted)")
	cmd.Flags().IntVarP(&n, "lines", "n", 20, "how many of the newest events to show first")
	return cmd
}
