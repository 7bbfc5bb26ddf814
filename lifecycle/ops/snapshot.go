// Package ops is the operator's view of a fleet, read from Redis alone: the
// queue, the runs in flight with their heartbeats, the leader leases and the
// live replicas (Read), and the few interventions an operator may need
// (requeue, release, cancel, pause and resume of a project's queue). agentsmithctl and the daemon's status page
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
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// LeaderRoles are the roles that run on one replica at a time.
var LeaderRoles = keys.LeaderRoles

// Snapshot is the fleet at one moment. Durations are milliseconds in JSON
// so scripts need no duration parser.
type Snapshot struct {
	At        time.Time  `json:"at"`
	Queue     Queue      `json:"queue"`
	Runs      []Run      `json:"runs"`
	Leases    []Lease    `json:"leases"`
	Instances []Instance `json:"instances"`
	// Pools are the pools with their waiting requests and live consumers
	// (ReadPools); one that is Unserved waits for a replica of its pool.
	Pools []Pool `json:"pools"`
	// Paused are the projects whose queue is paused (lifecycle.PauseProject).
	Paused []lifecycle.Pause `json:"paused"`
	// Outcomes are the runs whose pipeline ended and whose Done or Failed
	// waits for the tracker (runstate.Outcome), oldest first.
	Outcomes []Outcome `json:"outcomes"`
	// Refusals are the tickets whose label write the tracker refused for
	// good (lifecycle.Refusals), soonest next try first, at most
	// lifecycle.MaxListedRefusals of RefusalsTotal.
	Refusals      []lifecycle.RefusalEntry `json:"refusals"`
	RefusalsTotal int64                    `json:"refusalsTotal"`
	// Awaiting are the tickets parked at an approval gate (the parked
	// index, lifecycle.ListParked), longest waiting first, at most
	// lifecycle.MaxListedParked of AwaitingTotal.
	Awaiting      []lifecycle.ParkedEntry `json:"awaiting"`
	AwaitingTotal int64                   `json:"awaitingTotal"`
}

// Outcome is one run's outcome waiting for the tracker: its pipeline ended
// at Recorded, and the transition to To and its comment are written from
// the record once the tracker answers, never by running it again.
type Outcome struct {
	Ticket   string        `json:"ticket"`
	Ref      platforms.Ref `json:"ref"`
	Project  string        `json:"project"`
	Instance string        `json:"instance"`
	Attempt  int           `json:"attempt"`
	To       string        `json:"to"`
	Recorded time.Time     `json:"recorded"`
	// AgeMS is how long it has waited; Tries how often a finisher tried
	// it after the run handed it over, LastError the last try's error.
	AgeMS     int64  `json:"age_ms"`
	Tries     int    `json:"tries"`
	LastError string `json:"last_error,omitempty"`
}

// Queue describes the pending work, on every priority level and in the
// delayed set (ReadQueue).
type Queue struct {
	// Depth counts the requests waiting on every priority level.
	Depth int64 `json:"depth"`
	// Levels is Depth per level, highest priority (lowest number) first.
	Levels []Level `json:"levels"`
	// OldestAgeMS is how long the request that has waited longest has
	// waited since its enqueued_at, among every level's head and the
	// delayed set (0 when there is none). A retry's enqueued_at is its due
	// time, so its backoff is not counted; a request given back at a
	// concurrency limit keeps its own, so its wait is.
	OldestAgeMS int64  `json:"oldest_age_ms"`
	Oldest      string `json:"oldest,omitempty"`
	// Delayed counts requests waiting out a retry backoff or a concurrency
	// limit (keys.Delayed()).
	Delayed int64 `json:"delayed"`
	// Processing counts requests taken by a consumer, not yet started.
	Processing int64 `json:"processing"`
}

// Level is one priority level's depth.
type Level struct {
	Priority int   `json:"priority"`
	Depth    int64 `json:"depth"`
	// Pool is the level's pool, "" for the default pool.
	Pool string `json:"pool,omitempty"`
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
	// Ended is when the run's pipeline ended, when its outcome is
	// recorded and waits for the tracker (zero while it runs).
	Ended time.Time `json:"ended,omitzero"`
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
// q must be the queue with the fleet's layout (projects.Queue), or requests
// on the levels it lacks go uncounted.
func Read(ctx context.Context, rdb redis.UniversalClient, q *queue.Queue, cfg ReadConfig) (Snapshot, error) {
	if cfg.HeartbeatTTL <= 0 {
		cfg.HeartbeatTTL = keys.HeartbeatTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	s := Snapshot{At: cfg.Clock().UTC(), Runs: []Run{}, Leases: []Lease{}, Instances: []Instance{}, Outcomes: []Outcome{}}
	var err error
	if s.Pools, err = ReadPools(ctx, rdb, q); err != nil {
		return s, err
	}
	if s.Queue, err = ReadQueue(ctx, q, s.At); err != nil {
		return s, err
	}
	runs, err := runstate.Inspect(ctx, rdb)
	if err != nil {
		return s, err
	}
	if s.Paused, err = lifecycle.PausedProjects(ctx, rdb); err != nil {
		return s, err
	}
	outcomes, _, err := runstate.ReadOutcomes(ctx, rdb)
	if err != nil {
		return s, err
	}
	if s.Refusals, s.RefusalsTotal, err = lifecycle.ListRefusals(ctx, rdb, lifecycle.MaxListedRefusals); err != nil {
		return s, err
	}
	if s.Awaiting, s.AwaitingTotal, err = lifecycle.ListParked(ctx, rdb, lifecycle.MaxListedParked); err != nil {
		return s, err
	}
	ended := map[string]time.Time{}
	for _, o := range outcomes {
		ended[o.Ref.Key()] = o.Recorded
		s.Outcomes = append(s.Outcomes, Outcome{Ticket: o.Ref.String(), Ref: o.Ref, Project: o.Ref.Project, Instance: o.Instance,
			Attempt: o.Attempt, To: o.To, Recorded: o.Recorded, AgeMS: o.Age(s.At).Milliseconds(), Tries: o.Tries, LastError: o.LastError})
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
		proc     []*redis.IntCmd
		inst     = make([]*redis.DurationCmd, len(instKeys))
		leaseVal = make([]*redis.StringCmd, len(LeaderRoles))
		leaseTTL = make([]*redis.DurationCmd, len(LeaderRoles))
	)
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
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
	for _, c := range proc {
		s.Queue.Processing += c.Val()
	}
	for _, run := range runs {
		rec := run.Record
		r := Run{Ticket: run.Field, Project: rec.Ref.Project, Instance: rec.Instance, Attempt: rec.Attempt,
			RequestID: rec.RequestID, Started: rec.Started, HeartbeatAgeMS: -1, InstanceAlive: run.OwnerAlive, Ended: ended[run.Field]}
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

// ReadQueue counts the queue on every priority level and in the delayed
// set in one round trip: the numbers agentsmithctl status, the status page
// and the metrics all show, so they cannot disagree.
func ReadQueue(ctx context.Context, q *queue.Queue, now time.Time) (Queue, error) {
	if q == nil {
		return Queue{}, errors.New("read queue: no queue layout given")
	}
	c, err := q.Count(ctx, enqueuedAt)
	if err != nil {
		return Queue{}, fmt.Errorf("read queue: %w", err)
	}
	out := Queue{Depth: c.Waiting(), Delayed: c.Delayed, Levels: make([]Level, len(c.Levels))}
	for i, l := range c.Levels {
		out.Levels[i] = Level{Priority: l.Priority, Depth: l.Len}
		if l.Pool != lifecycle.DefaultPool {
			out.Levels[i].Pool = l.Pool
		}
	}
	if c.Oldest != nil {
		req, _ := lifecycle.DecodeRequest(c.Oldest) // decoded before by enqueuedAt
		out.Oldest = req.Ref.String()
		out.OldestAgeMS = max(now.Sub(c.OldestAt).Milliseconds(), 0)
	}
	return out, nil
}

// enqueuedAt is a queue entry's enqueue time, for queue.Count; entries
// that are not PipelineRequests, or carry no time, have none.
func enqueuedAt(payload []byte) (time.Time, bool) {
	req, err := lifecycle.DecodeRequest(payload)
	if err != nil || req.EnqueuedAt.IsZero() {
		return time.Time{}, false
	}
	return req.EnqueuedAt, true
}

// scanKeys finds the keys matching pattern on every master of a cluster
// (a plain SCAN reaches one node), sorted.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	out, err := redisconn.ScanKeys(ctx, rdb, pattern)
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
