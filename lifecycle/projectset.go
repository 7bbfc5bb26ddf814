package lifecycle

import (
	"sync"
	"sync/atomic"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// ProjectSource is where the claim service, the executor and the status
// page find projects. A fixed Projects map is one; a ProjectSet, which
// discovery changes while the daemon runs, is the other.
type ProjectSource interface {
	// Watched are the projects whose tickets may be claimed, listed and
	// repaired now: a snapshot that is never modified once returned.
	Watched() Projects
	// Lookup resolves a ref's project, including one that has left the
	// watched set since its ticket was claimed, so that run finishes.
	Lookup(ref platforms.Ref) (*Project, bool)
}

// Watched is p itself: a fixed map never changes.
func (p Projects) Watched() Projects { return p }

// ProjectSet is the live set of projects of a daemon whose repositories are
// discovered (internal/discovery): Replace publishes a new watched set
// while claims, runs and housekeeping read it, without a lock on their
// path. A project that leaves the set (its repository archived, removed
// from the installation, or no longer matching) is retired, not forgotten:
// no new ticket of it is claimed, listed or repaired, and the requests
// already queued or running for it still resolve through Lookup, so they
// finish rather than being dropped as an unknown project's. A retired
// project that comes back is revived with the same Project (its tracker
// and HTTP client). Retired projects are kept until the process exits.
type ProjectSet struct {
	mu  sync.Mutex // serialises Replace: one writer
	cur atomic.Pointer[projectView]
}

// projectView is one published state; never modified once stored.
type projectView struct {
	watched, retired Projects
}

// NewProjectSet starts a set watching projects.
func NewProjectSet(projects Projects) *ProjectSet {
	s := &ProjectSet{}
	s.cur.Store(&projectView{watched: cloneProjects(projects), retired: Projects{}})
	return s
}

// Watched is the current watched set.
func (s *ProjectSet) Watched() Projects { return s.cur.Load().watched }

// Lookup resolves a watched or retired project.
func (s *ProjectSet) Lookup(ref platforms.Ref) (*Project, bool) {
	v := s.cur.Load()
	if p, ok := v.watched[ref.Project]; ok {
		return p, true
	}
	p, ok := v.retired[ref.Project]
	return p, ok
}

// Retired is the project named name if it left the watched set, for a
// caller about to build it again: reviving it keeps its tracker.
func (s *ProjectSet) Retired(name string) (*Project, bool) {
	p, ok := s.cur.Load().retired[name]
	return p, ok
}

// Replace makes next the watched set and retires every watched project
// missing from it. It returns the names added (new or revived) and retired,
// sorted.
func (s *ProjectSet) Replace(next Projects) (added, retired []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	v := &projectView{watched: cloneProjects(next), retired: cloneProjects(old.retired)}
	for _, name := range old.watched.Names() {
		if _, ok := next[name]; !ok {
			v.retired[name] = old.watched[name]
			retired = append(retired, name)
		}
	}
	for _, name := range v.watched.Names() {
		delete(v.retired, name)
		if _, ok := old.watched[name]; !ok {
			added = append(added, name)
		}
	}
	s.cur.Store(v)
	return added, retired
}

func cloneProjects(p Projects) Projects {
	out := make(Projects, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}
