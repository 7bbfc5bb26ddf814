package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// followInterval is how often logs --follow looks for more output.
const followInterval = 200 * time.Millisecond

func logsCmd(a *app) *cobra.Command {
	var project string
	var attempt int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs TICKET [--attempt N] [--follow]",
		Short: "An attempt's full pipeline output (the last attempt by default)",
		Long: `Prints the log file of one attempt (default: the last) as the replica that ran it wrote it.
Where the file is comes from Redis (agentsmith:runlogs:{platform}:{id}); the file itself lives on
that replica (in its consumer.output.logs_dir), so run this where the file is reachable:
on that machine or in that pod. --follow keeps printing while the attempt runs. -o json prints
the recorded attempts (replica, path, start) instead.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ref, err := a.loadTicket(argv[0], project)
			if err != nil {
				return err
			}
			rls, err := runstate.RunLogs(cmd.Context(), a.rdb, ref)
			if err != nil {
				return err
			}
			if len(rls) == 0 {
				return notFound("no attempt of %s has a recorded log", ref)
			}
			if a.output == "json" {
				return a.emit(rls, nil)
			}
			rl := rls[len(rls)-1]
			if attempt > 0 {
				rl.Attempt = 0
				for _, r := range rls {
					if r.Attempt == attempt {
						rl = r
					}
				}
				if rl.Attempt == 0 {
					return notFound("%s has no log of attempt %d (recorded: %d to %d)", ref, attempt, rls[0].Attempt, rls[len(rls)-1].Attempt)
				}
			}
			f, err := lifecycle.OpenLog([]string{a.cfg.Consumer.Output.LogsDir}, rl.Path)
			if err != nil {
				if errors.Is(err, lifecycle.ErrLogNotHere) {
					return notFound("attempt %d of %s was logged by %s to %s, which is not here: run agentsmithctl logs on that replica (or it was removed by retention)", rl.Attempt, ref, rl.Instance, rl.Path)
				}
				return err
			}
			defer f.Close()
			if !follow {
				_, err = io.Copy(a.out, f)
				return err
			}
			return followLog(cmd.Context(), a.out, f, func(ctx context.Context) (bool, error) {
				return attemptRunning(ctx, a.rdb, ref, rl.Attempt)
			}, a.followEvery)
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "which attempt (default: the last recorded)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing while the attempt runs")
	return cmd
}

// followLog copies f to w until running reports the attempt over and f is
// read to its end, looking for more every interval.
func followLog(ctx context.Context, w io.Writer, f io.Reader, running func(context.Context) (bool, error), interval time.Duration) error {
	if interval <= 0 {
		interval = followInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		// Read what there is, then ask: output written before the run
		// ended is then always printed by the final copy.
		still, err := running(ctx)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		if !still {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// attemptRunning reports whether the ticket's in-flight record is this
// attempt's run.
func attemptRunning(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref, attempt int) (bool, error) {
	rec, ok, err := runstate.RunOf(ctx, rdb, ref)
	return ok && rec.Attempt == attempt, err
}
