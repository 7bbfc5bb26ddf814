package config

import (
	"fmt"
	"slices"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// PoolName is the pool the project's requests wait in: Pool, or
// DefaultPool when unset.
func (p *Project) PoolName() string { return lifecycle.PoolOf(p.Pool) }

// PoolNames is every pool the project's requests wait in: its pool and
// its stages' pools (a stage without one uses the project's), sorted and
// without repeats.
func (p *Project) PoolNames() []string {
	out := []string{p.PoolName()}
	for _, s := range p.Pipeline.Stages {
		if s.Pool != "" {
			out = append(out, s.Pool)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Pools lists every pool the config names, consumer.pools and the
// projects' and their stages' pools, sorted and without repeats: the pools whose queues a
// replica builds (internal/projects.Queue), so what one replica pushes to
// a pool it does not serve lands in that pool's queue all the same.
func (c *Config) Pools() []string {
	out := slices.Clone(c.Consumer.PoolNames())
	for i := range c.Projects {
		out = append(out, c.Projects[i].PoolNames()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

const poolNameRule = "must match [a-z][a-z0-9-]{0,31} (a pool name is part of Redis keys and metric labels)"

func (c *Consumer) validatePools(errs *Errors) {
	for i, name := range c.Pools {
		path := fmt.Sprintf("consumer.pools[%d]", i)
		switch {
		case !lifecycle.ValidPoolName(name):
			errs.add(path, poolNameRule)
		case slices.Index(c.Pools, name) < i:
			errs.add(path, fmt.Sprintf("duplicate pool %q", name))
		}
	}
}

func (p *Project) validatePool(errs *Errors, path string) {
	validatePoolName(errs, path+".pool", p.Pool)
}

// validatePoolName checks a pool field that may be unset.
func validatePoolName(errs *Errors, path, pool string) {
	if pool != "" && !lifecycle.ValidPoolName(pool) {
		errs.add(path, poolNameRule)
	}
}
