package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Reindex mends project's entries in the parked index (lifecycle.Park)
// from listed, the project's AwaitingApproval tickets as the tracker
// listed them at listedAt (the GateKeeper's listing). A listed ticket
// without an entry (a replica died between its park and the index write)
// gets one, under its claim lock and from a fresh read that still finds it
// parked, dated by its keys.GateParked when there is one. An entry of a
// ticket not listed, parked before listedAt less grace (a tracker's search
// may lag a fresh label), is kept as Expire keeps a listed one, from a
// fresh read under the claim lock: a ticket closed or without its trigger
// label and still parked leaves the gate (Failed, cancelled) and the
// index; one no longer parked, or deleted, leaves the index unless it was
// parked again since; one still parked and open stays. It returns how many
// entries it added and dropped.
func (g *Gate) Reindex(ctx context.Context, project string, listed []*platforms.Ticket, listedAt time.Time, grace time.Duration) (added, dropped int, err error) {
	p, ok := g.claims.Projects().Lookup(platforms.Ref{Project: project})
	if !ok {
		return 0, 0, fmt.Errorf("gate: unknown project %q", project)
	}
	have, err := lifecycle.ParkedOf(ctx, g.rdb, project)
	if err != nil {
		return 0, 0, fmt.Errorf("gate: %w: %w", claim.ErrRedisUnavailable, err)
	}
	var errs []error
	seen := map[string]bool{}
	for _, t := range listed {
		ref := t.Ref
		ref.Project = project
		seen[ref.Key()] = true
		if _, ok := have[ref.Key()]; ok {
			continue
		}
		did, err := g.indexParked(ctx, p, ref)
		if err != nil {
			errs = append(errs, err)
		} else if did {
			added++
		}
	}
	for k, e := range have {
		if seen[k] || !e.Since.Before(listedAt.Add(-grace)) {
			continue
		}
		out, err := g.keep(ctx, e.Ref, &e)
		switch {
		case err != nil:
			errs = append(errs, err)
		case out == OutcomeUnparked:
			dropped++
			g.log.Info("dropped from the parked index: no longer awaits approval", zap.String("ticket", e.Ref.String()))
		case out == OutcomeCancelled, out == OutcomeTimedOut:
			dropped++
			g.log.Info("parked ticket "+out, zap.String("ticket", e.Ref.String()))
		case out != "":
			g.log.Info("parked ticket "+out, zap.String("ticket", e.Ref.String()))
		}
	}
	return added, dropped, errors.Join(errs...)
}

// indexParked lists ref in the parked index if, read afresh under its
// claim lock (so no decision runs meanwhile), it is still parked.
func (g *Gate) indexParked(ctx context.Context, p *lifecycle.Project, ref platforms.Ref) (bool, error) {
	did := false
	_, err := g.claims.WithLock(ctx, ref, lifecycle.SourceGate, func(ctx context.Context) error {
		t, err := p.Tracker.Get(ctx, ref)
		if err != nil {
			return fmt.Errorf("gate %s: read ticket: %w", ref, err)
		}
		labels := p.Labels(g.claims.Labels())
		if labels.StateOf(t.Labels) != lifecycle.AwaitingApproval {
			return nil
		}
		since := g.cfg.Clock()
		if v, err := g.rdb.Get(ctx, keys.GateParked(ref.Key())).Result(); err == nil {
			if at, perr := time.Parse(time.RFC3339Nano, v); perr == nil {
				since = at
			}
		} else if !errors.Is(err, redis.Nil) {
			return fmt.Errorf("gate %s: read when parked: %w: %w", ref, claim.ErrRedisUnavailable, err)
		}
		if err := lifecycle.Park(ctx, g.rdb, lifecycle.ParkedEntry{Ref: ref, Stage: labels.StageOf(t.Labels), Title: t.Title, Since: since}); err != nil {
			return fmt.Errorf("gate %s: %w: %w", ref, claim.ErrRedisUnavailable, err)
		}
		did = true
		return nil
	})
	return did, err
}

// unparkIfStill drops e from the parked index unless its ticket was parked
// again since e was read (keys.GateParked watched: a park between the read
// and the drop keeps its entry).
func unparkIfStill(ctx context.Context, rdb redis.UniversalClient, e lifecycle.ParkedEntry) (bool, error) {
	k := keys.GateParked(e.Ref.Key())
	did := false
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if v != "" && v != lifecycle.ParkedStamp(e.Since) {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			lifecycle.UnparkOn(ctx, pipe, e.Ref)
			return nil
		})
		did = err == nil
		return err
	}, k)
	if errors.Is(err, redis.TxFailedErr) {
		return false, nil // parked again meanwhile: the next cycle looks again
	}
	return did, err
}
