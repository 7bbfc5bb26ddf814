package main

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

type ticketRow struct {
	Ticket string `json:"ticket"`
	State  string `json:"state"`
	Title  string `json:"title"`
	URL    string `json:"url"`
}

func ticketsCmd(a *app) *cobra.Command {
	var project, state string
	cmd := &cobra.Command{
		Use:   "tickets",
		Short: "List a project's open tickets by lifecycle state, from the tracker",
		Long: `Lists open tickets (the trackers' list APIs return open ones) in one lifecycle state,
or in every state when --state is not given. Pending means: carries the trigger label and no
lifecycle label.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.loadTrackers(cmd.Context()); err != nil {
				return err
			}
			pc, err := a.project(project)
			if err != nil {
				return err
			}
			p := a.projects[pc.Name]
			states := lifecycle.AllStates
			if state != "" {
				s, err := lifecycle.ParseState(state)
				if err != nil {
					return usageErr("--state %q: want one of %s", state, strings.Join(stateNames(), ", "))
				}
				states = []lifecycle.State{s}
			}
			labels := a.labels()
			rows := []ticketRow{}
			seen := map[string]bool{}
			for _, s := range states {
				label := labels.Label(s)
				if s == lifecycle.Pending {
					label = p.TriggerLabel
				}
				ts, err := p.Tracker.ListOpen(cmd.Context(), label)
				if err != nil {
					return err
				}
				for _, t := range ts {
					if got := labels.StateOf(t.Labels); got == s && !seen[t.Ref.Key()] && (s != lifecycle.Pending || t.HasLabel(p.TriggerLabel)) {
						seen[t.Ref.Key()] = true
						rows = append(rows, ticketRow{Ticket: t.Ref.String(), State: s.String(), Title: t.Title, URL: t.URL})
					}
				}
			}
			slices.SortStableFunc(rows, func(x, y ticketRow) int { return strings.Compare(x.Ticket, y.Ticket) })
			return a.emit(rows, func(w io.Writer) {
				row(w, "TICKET", "STATE", "TITLE", "URL")
				for _, r := range rows {
					row(w, r.Ticket, r.State, r.Title, r.URL)
				}
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project name from the config (default: the only one)")
	names := stateNames()
	cmd.Flags().StringVar(&state, "state", "", strings.Join(names[:len(names)-1], ", ")+" or "+names[len(names)-1]+" (default: all)")
	_ = cmd.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return stateNames(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// stateNames are lifecycle's state names in lifecycle order, the values
// --state takes.
func stateNames() []string {
	out := make([]string, len(lifecycle.AllStates))
	for i, s := range lifecycle.AllStates {
		out[i] = s.String()
	}
	return out
}
