package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// Pool is one pool as the fleet sees it: the requests waiting in its
// queue and the live replicas whose consumers take from it.
type Pool struct {
	Name    string `json:"name"`
	Waiting int64  `json:"waiting"`
	// Consumers are the ids of the live replicas serving the pool.
	Consumers []string `json:"consumers"`
}

// Unserved reports a pool whose requests nobody will take: some wait and
// no live replica serves the pool.
func (p Pool) Unserved() bool { return p.Waiting > 0 && len(p.Consumers) == 0 }

// ReadPools reads every pool of q's layout, and every pool a live replica
// serves, with its waiting requests and its consumers (from the replicas'
// liveness keys, lifecycle.Replica), sorted by name.
func ReadPools(ctx context.Context, rdb redis.UniversalClient, q *queue.Queue) ([]Pool, error) {
	if q == nil {
		return nil, errors.New("read pools: no queue layout given")
	}
	c, err := q.Count(ctx, enqueuedAt)
	if err != nil {
		return nil, fmt.Errorf("read pools: %w", err)
	}
	replicas, err := ReadReplicas(ctx, rdb)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Pool{}
	pool := func(name string) *Pool {
		name = lifecycle.PoolOf(name) // a queue built without pools names its own ""
		if byName[name] == nil {
			byName[name] = &Pool{Name: name, Consumers: []string{}}
		}
		return byName[name]
	}
	for _, name := range q.Pools() {
		pool(name)
	}
	for _, l := range c.Levels {
		pool(l.Pool).Waiting += l.Len
	}
	for _, r := range replicas {
		for _, name := range r.Pools {
			p := pool(name)
			p.Consumers = append(p.Consumers, r.ID)
		}
	}
	out := make([]Pool, 0, len(byName))
	for _, p := range byName {
		slices.Sort(p.Consumers)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ReadReplicas reads every live replica's liveness record, sorted by id.
func ReadReplicas(ctx context.Context, rdb redis.UniversalClient) ([]lifecycle.Replica, error) {
	ks, err := scanKeys(ctx, rdb, keys.InstancePattern())
	if err != nil {
		return nil, err
	}
	vals := make([]*redis.StringCmd, len(ks))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range ks {
			vals[i] = p.Get(ctx, k)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read replicas: %w", err)
	}
	var out []lifecycle.Replica
	for i, v := range vals {
		if s := v.Val(); s != "" { // "": expired between SCAN and GET
			r := lifecycle.DecodeReplica(s)
			r.ID = strings.TrimPrefix(ks[i], keys.Instance(""))
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b lifecycle.Replica) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
