// Package ops is the operator's view of a fleet, read from Redis alone: the
// queue, the runs in flight with their heartbeats, the leader leases and the
// live replicas (Read), and the few interventions an operator may need
// (requeue, release, cancel). agentsmithctl and the daemon's status page
// share it, so both show the same numbers.
package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// LeaderRoles are the roles that run on one replica at a time.
var LeaderRoles = []string{"poller", "housekeeping"}

// Snapshot is the fleet at one moment. Durations are milliseconds in JSON
// so scripts need no duration parser.
type Snapshot struct {
	At        time.Time  `json:"at"`
	Queue     Queue      `json:"queue"`
	Runs      []Run      `json:"runs"`
	Leases    []Lease    `json:"leases"`
	Instances []Instance `json:"instances"`
}

// Queue describes the pending work.
type Queue struct {
	Depth int64 `json:"depth"`
	// OldestAgeMS is how long the request at the head has waited (0 when
	// the queue is empty).
	OldestAgeMS int64  `json:"oldest_age_ms"`
	Oldest      string `json:"oldest,omitempty"`
	// Delayed counts requests waiting out a retry backoff (keys.Delayed()).
	Delayed int64 `json:"delayed"`
	// Processing counts requests taken by a consumer, not yet started.
	Processing int64 `json:"processing"`
}

// Run is one pipeline in flight.
type Run struct {
	Ticket    string        `json:"ticket"`
	Ref       platforms.Ref `json:"ref"`
	Project   string        `json:"project"`
	Instance  string        `json:"instance"`
	Attempt   int           `json:"attempt"`
	RequestID string        `json:"request_id"`
	Started   time.Time     `json:"started"`
	// HeartbeatAgeMS is the time since the heartbeat was last renewed
	// (its TTL minus what is left), -1 when the heartbeat is gone.
	HeartbeatAgeMS int64 `json:"heartbeat_age_ms"`
	// InstanceAlive is whether the owner's liveness key exists.
	InstanceAlive bool `json:"instance_alive"`
}

// Lease is a leader lease's holder ("" when nobody holds it).
type Lease struct {
	Role        string `json:"role"`
	Holder      string `json:"holder"`
	ExpiresInMS int64  `json:"expires_in_ms"`
}

// Instance is a live replica.
type Instance struct {
	ID          string `json:"id"`
	ExpiresInMS int64  `json:"expires_in_ms"`
}

// ReadConfig says how to interpret what Redis holds.
type ReadConfig struct {
	// HeartbeatTTL is the consumers' heartbeat TTL, to turn a heartbeat's
	// remaining PTTL into its age. Default keys.HeartbeatTTL.
	HeartbeatTTL time.Duration
	Clock        func() time.Time
}

// Read takes a snapshot in a handful of round trips whatever the number of
// runs (every per-key read is pipelined). It is not atomic: a run may end
// between reading the index and its heartbeat, which then shows as gone.
func Read(ctx context.Context, rdb redis.UniversalClient, cfg ReadConfig) (Snapshot, error) {
	if cfg.HeartbeatTTL <= 0 {
		cfg.HeartbeatTTL = keys.HeartbeatTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := Snapshot{At: cfg.Clock().UTC(), Runs: []Run{}, Leases: []Lease{}, Instances: []Instance{}}
	runs, err := runstate.Inspect(ctx, rdb)
	if err != nil {
		return s, err
	}
	instKeys, err := scanKeys(ctx, rdb, keys.InstancePattern())
	if err != nil {
		return s, err
	}
	procKeys, err := scanKeys(ctx, rdb, keys.ProcessingPattern())
	if err != nil {
		return s, err
	}
	var (
		depth, delayed *redis.IntCmd
		head           *redis.StringCmd
		proc           []*redis.IntCmd
		inst           = make([]*redis.DurationCmd, len(instKeys))
		leaseVal       = make([]*redis.StringCmd, len(LeaderRoles))
		leaseTTL       = make([]*redis.DurationCmd, len(LeaderRoles))
	)
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		depth = p.LLen(ctx, keys.Queue())
		head = p.LIndex(ctx, keys.Queue(), 0)
		delayed = p.ZCard(ctx, keys.Delayed())
		for _, k := range procKeys {
			proc = append(proc, p.LLen(ctx, k))
		}
		for i, k := range instKeys {
			inst[i] = p.PTTL(ctx, k)
		}
		for i, role := range LeaderRoles {
			leaseVal[i] = p.Get(ctx, keys.Leader(role))
			leaseTTL[i] = p.PTTL(ctx, keys.Leader(role))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return s, fmt.Errorf("read fleet status: %w", err)
	}
	s.Queue.Depth = depth.Val()
	s.Queue.Delayed = delayed.Val()
	for _, c := range proc {
		s.Queue.Processing += c.Val()
	}
	if raw := head.Val(); raw != "" {
		if req, err := lifecycle.DecodeRequest([]byte(raw)); err == nil {
			s.Queue.Oldest = req.Ref.String()
			if !req.EnqueuedAt.IsZero() {
				s.Queue.OldestAgeMS = max(s.At.Sub(req.EnqueuedAt).Milliseconds(), 0)
			}
		}
	}
	for _, run := range runs {
		rec := run.Record
		r := Run{Ticket: run.Field, Project: rec.Ref.Project, Instance: rec.Instance, Attempt: rec.Attempt,
			RequestID: rec.RequestID, Started: rec.Started, HeartbeatAgeMS: -1, InstanceAlive: run.OwnerAlive}
		if rec.Ref.ID != "" {
			r.Ticket, r.Ref = rec.Ref.String(), rec.Ref
		}
		if left := run.HeartbeatLeft; left > 0 {
			r.HeartbeatAgeMS = max((cfg.HeartbeatTTL - left).Milliseconds(), 0)
		}
		s.Runs = append(s.Runs, r)
	}
	slices.SortFunc(s.Runs, func(a, b Run) int { return strings.Compare(a.Ticket, b.Ticket) })
	for i, k := range instKeys {
		if left := inst[i].Val(); left > 0 || left == -1 {
			s.Instances = append(s.Instances, Instance{ID: strings.TrimPrefix(k, keys.Instance("")), ExpiresInMS: left.Milliseconds()})
		}
	}
	slices.SortFunc(s.Instances, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	for i, role := range LeaderRoles {
		l := Lease{Role: role}
		if v := leaseVal[i].Val(); v != "" {
			l.Holder = leaseInstance(v)
			l.ExpiresInMS = max(leaseTTL[i].Val().Milliseconds(), 0)
		}
		s.Leases = append(s.Leases, l)
	}
	return s, nil
}

// leaseInstance strips the term token from a lease value
// ("instance/term" → "instance"); see pkg/lease.
func leaseInstance(v string) string {
	if i := strings.LastIndex(v, "/"); i >= 0 {
		return v[:i]
	}
	return v
}

func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var out []string
	iter := rdb.Scan(ctx, 0, pattern, 500).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan %s: %w", pattern, err)
	}
	slices.Sort(out)
	return out, nil
}
