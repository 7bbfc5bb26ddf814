package jira

import (
	"strconv"
	"sync"
	"time"
)

// Jira Cloud's search (/rest/api/3/search/jql) is eventually consistent: a
// write shows up in search after seconds, sometimes minutes, unless the
// search names the issue in reconcileIssues, which makes at most 50 issues
// read consistently ("search and reconcile",
// https://developer.atlassian.com/cloud/jira/platform/search-and-reconcile/;
// project-wide reconciliation does not exist, JRACLOUD-96208, whose
// workaround is exactly this: remember the issues written recently and pass
// them). So the tracker remembers the issues this process wrote and
// reconciles the newest of them on every search: the poller's and the
// housekeeping's lists then see this replica's own writes at once. Writes
// of other replicas and of humans still show up only when the index has
// them, which is why every caller acts on a ticket only after a fresh Get
// (the claim reads before it writes, and so does every housekeeping
// repair). Data Center's /rest/api/2/search has no such parameter and
// needs none.

// MaxReconcileIssues is the most issue ids one search may reconcile.
const MaxReconcileIssues = 50

// DefaultReconcileWindow is how long a write is reconciled: past Atlassian's
// "seconds to minutes", after which the index has the write.
const DefaultReconcileWindow = 10 * time.Minute

// maxKnownIDs bounds the key → id map; it is rebuilt from reads when full
// (a write always follows a read of its ticket).
const maxKnownIDs = 10000

// recentWrites remembers the numeric ids (reconcileIssues takes ids, not
// keys) of the issues written in the last window, newest last.
type recentWrites struct {
	mu     sync.Mutex
	now    func() time.Time
	window time.Duration
	ids    map[string]int64 // issue key → id, learned from every read
	writes []written
}

type written struct {
	id int64
	at time.Time
}

// learn records an issue's id as a read returned it.
func (r *recentWrites) learn(key, id string) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || key == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil || len(r.ids) >= maxKnownIDs {
		r.ids = map[string]int64{}
	}
	r.ids[key] = n
}

// idOf is the issue's id, when a read returned it.
func (r *recentWrites) idOf(key string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.ids[key]
	return id, ok
}

// wrote records a write of the issue key.
func (r *recentWrites) wrote(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.ids[key]
	if !ok {
		return
	}
	r.writes = append(r.writes, written{id: id, at: r.now()})
	r.prune()
}

// reconcile is the ids to pass as reconcileIssues: the issues written in
// the window, newest first, each once, at most MaxReconcileIssues.
func (r *recentWrites) reconcile() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune()
	var out []int64
	seen := map[int64]bool{}
	for i := len(r.writes) - 1; i >= 0 && len(out) < MaxReconcileIssues; i-- {
		if id := r.writes[i].id; !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// prune drops writes older than the window, and all but the newest few
// hundred (a burst of writes to the same issues must not grow the list).
func (r *recentWrites) prune() {
	cutoff := r.now().Add(-r.window)
	i := 0
	for i < len(r.writes) && r.writes[i].at.Before(cutoff) {
		i++
	}
	if extra := len(r.writes) - i - 8*MaxReconcileIssues; extra > 0 {
		i += extra
	}
	r.writes = r.writes[i:]
}
