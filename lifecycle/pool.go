package lifecycle

import (
	"encoding/json"
	"regexp"
	"slices"
)

// DefaultPool is the pool of a project that names none and of a replica
// whose consumer.pools is unset. Its queue is the specification's
// agentsmith:queue:jobs, so a deployment without pools keeps every key.
const DefaultPool = "default"

// poolName is the form of a pool name: it becomes part of Redis keys
// (keys.PoolQueue) and metric labels, so it is short and plain.
var poolName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// ValidPoolName reports whether name may name a pool.
func ValidPoolName(name string) bool { return poolName.MatchString(name) }

// PoolFor is the Pool a request of p for stage carries: the stage's pool
// (pipeline.stages[].pool), else the project's; "" for the default pool,
// so a deployment without pools encodes no pool field. stage "" (a
// project without stages) or one p does not have takes the project's.
// Every writer of a request (claim, re-push, retry, hand-back, next stage)
// calls it, so a stage's requests wait in one pool whoever pushes them.
func (p *Project) PoolFor(stage string) string {
	pool, names := p.Pool, p.StageNames()
	if i := slices.Index(names, stage); i >= 0 && p.Stages[i].Pool != "" {
		pool = p.Stages[i].Pool
	}
	if pool == DefaultPool {
		return ""
	}
	return pool
}

// PoolLabel is a pool name read from a queue entry as a log field or a
// metric label may show it: the name when it is a valid pool name,
// "other" for "" (past a count's bound), else "invalid".
func PoolLabel(name string) string {
	switch {
	case name == "":
		return "other"
	case !ValidPoolName(name):
		return "invalid"
	}
	return name
}

// PoolOf is the pool a request names: "" is DefaultPool.
func PoolOf(pool string) string {
	if pool == "" {
		return DefaultPool
	}
	return pool
}

// Replica is what a replica's liveness key (keys.Instance) holds: its id
// and the pools its consumers take from (none without the consumer role),
// so the fleet can tell a pool whose requests nobody will take.
type Replica struct {
	ID    string   `json:"id"`
	Pools []string `json:"pools"`
}

// Encode is the liveness key's value.
func (r Replica) Encode() string {
	if r.Pools == nil {
		r.Pools = []string{}
	}
	b, _ := json.Marshal(r) // strings only: cannot fail
	return string(b)
}

// DecodeReplica reads a liveness key's value. A value that is not a
// record, an older replica's (its bare id), is a replica serving the
// default pool, as every replica of that version did.
func DecodeReplica(v string) Replica {
	var r Replica
	if err := json.Unmarshal([]byte(v), &r); err != nil || r.ID == "" {
		return Replica{ID: v, Pools: []string{DefaultPool}}
	}
	return r
}
