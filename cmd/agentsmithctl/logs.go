package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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
	var run, attempt int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs TICKET [--run R] [--attempt N] [--follow]",
		Short: "An attempt's full pipeline output (the last attempt by default)",
		Long: `Prints the log file of one attempt (default: the last) as the replica that ran it wrote it.
Each operator retry starts a new run, whose attempts count from 1 again; every run keeps its
logs. --run R picks the run (default: the last), --attempt N the attempt in it (default: its last).
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
			if run == 0 {
				run = rls[len(rls)-1].Run
			}
			i, ok := pickRunLog(rls, run, attempt)
			if !ok && attempt == 0 {
				return notFound("%s has no log of run %d (recorded: %s)", ref, run, recordedRuns(rls))
			}
			if !ok {
				return notFound("%s has no log of attempt %d of run %d (recorded: %s)", ref, attempt, run, recordedRuns(rls))
			}
			rl := rls[i]
			f, err := lifecycle.OpenLog([]string{a.cfg.Consumer.Output.LogsDir}, rl.Path)
			if err != nil {
				if errors.Is(err, lifecycle.ErrLogNotHere) {
					return notFound("run %d attempt %d of %s was logged by %s to %s, which is not here: run agentsmithctl logs on that replica (or it was removed by retention)", rl.Run, rl.Attempt, ref, rl.Instance, rl.Path)
				}
				return err
			}
			defer f.Close()
			if !follow {
				_, err = io.Copy(a.out, f)
				return err
			}
			// Only the last recorded attempt can be running: an earlier
			// run's attempt of the same number is over.
			last := i == len(rls)-1
			return followLog(cmd.Context(), a.out, f, func(ctx context.Context) (bool, error) {
				if !last {
					return false, nil
				}
				return attemptRunning(ctx, a.rdb, ref, rl.Attempt)
			}, a.followEvery)
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project of the ticket (default: inferred from the config)")
	cmd.Flags().IntVar(&run, "run", 0, "which run: each operator retry starts one (default: the last recorded)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "which attempt of the run (default: the run's last recorded)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing while the attempt runs")
	return cmd
}

// pickRunLog is the index in rls (as runstate.RunLogs returns them) of
// attempt of run; run 0 is the last run, attempt 0 that run's last attempt.
func pickRunLog(rls []runstate.RunLog, run, attempt int) (int, bool) {
	if len(rls) == 0 {
		return 0, false
	}
	if run == 0 {
		run = rls[len(rls)-1].Run
	}
	found := -1
	for i, r := range rls {
		if r.Run == run && (attempt == 0 || r.Attempt == attempt) {
			found = i // sorted: the last match is the run's last attempt
		}
	}
	return found, found >= 0
}

// recordedRuns lists the recorded runs and attempts, e.g. "run 1 attempts
// 1-3, run 2 attempts 1-1", for an error naming what there is.
func recordedRuns(rls []runstate.RunLog) string {
	var parts []string
	for i := 0; i < len(rls); {
		j := i
		for j+1 < len(rls) && rls[j+1].Run == rls[i].Run {
			j++
		}
		parts = append(parts, fmt.Sprintf("run %d attempts %d-%d", rls[i].Run, rls[i].Attempt, rls[j].Attempt))
		i = j + 1
	}
	return strings.Join(parts, ", ")
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
