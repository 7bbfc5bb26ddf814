package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

func pauseCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "pause PROJECT",
		Short: "Stop starting runs of a project's tickets (claims still enqueue; running ones finish)",
		Long: `Sets agentsmith:paused:{project}. Consumers then start no run of the project's requests:
each one taken is put aside in the delayed set (its ticket stays Enqueued, its attempt is not
used up) and looked at again every 30 s until resume. Claims still enqueue,
runs in flight finish, a cancel is still honoured. resume makes the put-aside requests due at once.`,
		Args: oneProject("pause"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			p, err := a.configuredProject(argv[0])
			if err != nil {
				return err
			}
			if err := lifecycle.PauseProject(cmd.Context(), a.rdb, p, a.instance(), a.clock()); err != nil {
				return err
			}
			out := struct {
				Project string `json:"project"`
				Key     string `json:"key"`
			}{p, keys.Paused(p)}
			return a.emit(out, func(w io.Writer) { fmt.Fprintf(w, "paused %s (%s)\n", out.Project, out.Key) })
		},
	}
}

func resumeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "resume PROJECT",
		Short: "Start runs of a paused project's tickets again, its waiting requests first",
		Args:  oneProject("resume"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			p, err := a.configuredProject(argv[0])
			if err != nil {
				return err
			}
			was, due, err := lifecycle.ResumeProject(cmd.Context(), a.rdb, p)
			if err != nil {
				return err
			}
			out := struct {
				Project   string `json:"project"`
				WasPaused bool   `json:"was_paused"`
				Due       int    `json:"requests_made_due"`
			}{p, was, due}
			return a.emit(out, func(w io.Writer) {
				if !was {
					fmt.Fprintf(w, "%s was not paused\n", p)
					return
				}
				fmt.Fprintln(w, resumed(p, due))
			})
		},
	}
}

// configuredProject loads the config and checks that name is one of its
// projects, so a typo does not pause a project nobody runs.
func (a *app) configuredProject(name string) (string, error) {
	if err := a.load(); err != nil {
		return "", err
	}
	if name == "" {
		return "", usageErr("PROJECT is empty")
	}
	p, err := a.project(name)
	if err != nil {
		return "", err
	}
	return p.Name, nil
}

// oneProject checks that a pause or resume names one project, and says
// what to pass when it does not.
func oneProject(verb string) cobra.PositionalArgs {
	return func(_ *cobra.Command, argv []string) error {
		switch {
		case len(argv) == 0:
			return usageErr("%s needs the project to %[1]s: its name in the config, as in agentsmithctl %[1]s app", verb)
		case len(argv) > 1:
			return usageErr("%s takes one project, got %d (%s): run it once per project", verb, len(argv), strings.Join(argv, " "))
		}
		return nil
	}
}

// resumed is resume's table line.
func resumed(project string, due int) string {
	if due == 1 {
		return fmt.Sprintf("resumed %s: 1 waiting request made due", project)
	}
	return fmt.Sprintf("resumed %s: %d waiting requests made due", project, due)
}
