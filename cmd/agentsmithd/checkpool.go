package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// readPools reads every pool's waiting requests and live consumers once
// for all projects' pool rows; nil without Redis (its row already fails).
func readPools(ctx context.Context, cfg *config.Config, rdb redis.UniversalClient, timeout time.Duration) ([]ops.Pool, error) {
	if rdb == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return ops.ReadPools(ctx, rdb, projects.Queue(rdb, cfg))
}

// checkPool is a project's "pool" row: whether a live replica takes the
// project's requests, in each pool they wait in (the project's and its
// stages', config.Project.PoolNames). It fails when requests wait in one
// of them and no live replica serves it, the one case where tickets wait
// with nobody coming. A project whose requests all wait in the default
// pool gets the row only then, so a deployment without pools sees the
// rows it always saw. With several pools the row is the worst of them and
// names each.
func checkPool(pc *config.Project, pools []ops.Pool, err error) (platforms.CheckResult, bool) {
	var rows []platforms.CheckResult
	for _, pool := range pc.PoolNames() {
		if r, ok := checkOnePool(pool, pools, err); ok {
			rows = append(rows, r)
		}
	}
	if len(rows) <= 1 {
		if len(rows) == 0 {
			return platforms.CheckResult{}, false
		}
		return rows[0], true
	}
	out := rows[0]
	details, fixes := make([]string, len(rows)), []string{}
	for i, r := range rows {
		details[i] = r.Detail
		if r.Fix != "" && !slices.Contains(fixes, r.Fix) {
			fixes = append(fixes, r.Fix)
		}
		if checkRank(r.Status) > checkRank(out.Status) {
			out.Status = r.Status
		}
	}
	out.Detail, out.Fix = strings.Join(details, "; "), strings.Join(fixes, "; ")
	return out, true
}

// checkRank orders check statuses, worst last.
func checkRank(s platforms.CheckStatus) int {
	return slices.Index([]platforms.CheckStatus{platforms.CheckOK, platforms.CheckWarn, platforms.CheckFail}, s)
}

// checkOnePool is checkPool's verdict on one pool of the project.
func checkOnePool(pool string, pools []ops.Pool, err error) (platforms.CheckResult, bool) {
	const name = "pool"
	if err != nil {
		return platforms.Warn(name, fmt.Sprintf("pool %s: %v", pool, err), "check Redis"), pool != config.DefaultPool
	}
	i := slices.IndexFunc(pools, func(p ops.Pool) bool { return p.Name == pool })
	if i < 0 {
		return platforms.CheckResult{}, false // no Redis: its row says so
	}
	p := pools[i]
	switch {
	case p.Unserved():
		return platforms.Fail(name, fmt.Sprintf("pool %s: %d request(s) wait and no live replica serves the pool", pool, p.Waiting),
			fmt.Sprintf("start a replica with the consumer role and %q in consumer.pools", pool)), true
	case pool == config.DefaultPool:
		return platforms.CheckResult{}, false
	case len(p.Consumers) == 0:
		return platforms.Warn(name, fmt.Sprintf("pool %s: no live replica serves the pool yet; its requests will wait", pool),
			fmt.Sprintf("start a replica with the consumer role and %q in consumer.pools", pool)), true
	}
	return platforms.OK(name, "pool %s: served by %s", pool, strings.Join(p.Consumers, ", ")), true
}
