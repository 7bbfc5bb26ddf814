package trackersim

import (
	"strconv"
	"sync"
	"time"
)

// Jira Cloud's search (/rest/api/3/search/jql) reads an eventually
// consistent index: "after a write operation is performed, subsequent
// search operations using the API without the reconcileIssues parameter may
// return stale or outdated data instead of the most recent updates for some
// time. The delay might vary from a few seconds to minutes [...] The
// majority of modifications are shown within seconds"
// (https://developer.atlassian.com/cloud/jira/platform/search-and-reconcile/).
// reconcileIssues (at most 50 issue ids) makes the search read those issues
// consistently; project-wide reconciliation does not exist (JRACLOUD-96208).
// The old /rest/api/2/search, which Data Center keeps, was strongly
// consistent (JRACLOUD-96208: it ran on JVIS, the new one on JSIS), so the
// lag applies to search/jql only.
//
// The sim's index serves, for each issue, the snapshot it had lagged ago: a
// write younger than that is not visible yet (a new issue is missing, a
// changed one matches and reads as it was), unless the search reconciles
// the id. Issue reads (GET issue) are always current.

// DefaultJiraSearchLag is how far search/jql lags behind writes unless a
// test sets another with SetJiraSearchLag. One second: the optimistic end
// of Atlassian's "within seconds", so a client that lists right after it
// wrote sees stale results (the behaviour to design for), while tests that
// wait for a poll with a deadline of seconds still finish quickly. Minutes
// happen too (bulk edits); a test that needs them names a longer lag.
const DefaultJiraSearchLag = time.Second

// jiraMaxReconcile is the most issue ids one search may reconcile.
const jiraMaxReconcile = 50

// searchIndex is a lagging search index, fed by every store mutation: Jira
// Cloud's (jiraIndex) and GitHub's issue search (ghIndex, github_search.go).
type searchIndex struct {
	mu   sync.Mutex
	lag  time.Duration
	hist map[string][]indexedSnap // issue "repo#number" → versions, oldest first
}

type indexedSnap struct {
	at time.Time
	sn snapshot
}

func jiraIndexKey(repo string, number int) string { return repo + "#" + strconv.Itoa(number) }

func (ix *searchIndex) init(lag time.Duration) {
	ix.lag = lag
	ix.hist = map[string][]indexedSnap{}
}

// record indexes one issue version written at now, keeping only the
// versions a search could still be served.
func (ix *searchIndex) record(now time.Time, sn snapshot) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	k := jiraIndexKey(sn.repo, sn.number)
	h := append(ix.hist[k], indexedSnap{at: now, sn: sn})
	cutoff := now.Add(-ix.lag)
	// Drop versions superseded by one that is already visible.
	for len(h) > 1 && !h[1].at.After(cutoff) {
		h = h[1:]
	}
	ix.hist[k] = h
}

// view is the version of cur's issue a search at now sees; ok is false when
// the issue is not in the index yet.
func (ix *searchIndex) view(now time.Time, cur snapshot) (snapshot, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	h, known := ix.hist[jiraIndexKey(cur.repo, cur.number)]
	if !known {
		return cur, true
	}
	cutoff := now.Add(-ix.lag)
	for i := len(h) - 1; i >= 0; i-- {
		if !h[i].at.After(cutoff) {
			return h[i].sn, true
		}
	}
	return snapshot{}, false
}

// SetJiraSearchLag sets how far Jira Cloud's search/jql lags behind writes
// (DefaultJiraSearchLag by default); 0 makes it consistent, a kind
// behaviour only a test that names it should ask for.
func (s *Sim) SetJiraSearchLag(d time.Duration) {
	s.jiraIndex.mu.Lock()
	defer s.jiraIndex.mu.Unlock()
	s.jiraIndex.lag = max(d, 0)
}

// jiraSearchView applies the index to the current snapshots of a search:
// each issue as the index has it, the reconciled ones as they are.
func (s *Sim) jiraSearchView(all []snapshot, reconcile map[int64]bool) []snapshot {
	now := s.clock()
	out := make([]snapshot, 0, len(all))
	for _, sn := range all {
		if reconcile[sn.id] {
			out = append(out, sn)
			continue
		}
		if v, ok := s.jiraIndex.view(now, sn); ok {
			out = append(out, v)
		}
	}
	return out
}
