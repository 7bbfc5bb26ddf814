package daemon

import (
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// lifecycleProject is a project's config as the lifecycle sees it.
func lifecycleProject(pc *config.Project, tr platforms.Tracker) *lifecycle.Project {
	pl := pc.Pipeline
	b := pl.Retry.Backoff
	p := &lifecycle.Project{
		Name: pc.Name, Platform: pc.Platform, Tracker: tr, TriggerLabel: pc.TriggerLabel,
		Pipeline: lifecycle.Pipeline{Command: pl.Command, Env: pl.Env, Timeout: pl.Timeout, MaxAttempts: pl.MaxAttempts,
			Retry: lifecycle.RetryPolicy{ExitCodes: pl.Retry.ExitCodes, OnTimeout: pl.Retry.OnTimeout,
				Backoff: lifecycle.Backoff{Initial: b.Initial, Max: b.Max, Multiplier: b.Multiplier, Jitter: b.Jitter}},
			Escalate:       lifecycle.EscalatePolicy{ExitCodes: pl.Escalate.ExitCodes, Label: pl.Escalate.Label, Mention: pl.Escalate.Mention},
			PersistCommand: pl.PersistCommand, PersistTimeout: pl.PersistTimeout,
		},
		Priority: lifecycle.PriorityPolicy{Labels: pc.Priority.Labels, Default: pc.Priority.Default},
		Limits:   lifecycle.Limits{Concurrency: pl.Concurrency, TokenConcurrency: pc.TokenConcurrency},
	}
	if pc.TokenConcurrency > 0 {
		p.Limits.TokenID = lifecycle.TokenID(pc.Token.Value())
	}
	return p
}

// newQueue builds the queue with one level per priority any project can
// give a ticket; the default level keeps the specification's key.
func newQueue(rdb redis.UniversalClient, cfg *config.Config) *queue.Queue {
	var prios []int
	for _, p := range cfg.Projects {
		prios = append(prios, p.Priority.Default)
		for _, v := range p.Priority.Labels {
			prios = append(prios, v)
		}
	}
	slices.Sort(prios)
	var levels []queue.Level
	for _, p := range slices.Compact(prios) {
		if p != config.DefaultPriority {
			levels = append(levels, queue.Level{Priority: p, Key: keys.QueueLevel(p)})
		}
	}
	return queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: config.DefaultPriority, Levels: levels,
		DelayedKey: keys.Delayed(), LowerEvery: cfg.Consumer.LowerPriorityEvery})
}
