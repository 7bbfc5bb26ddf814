package trackersim

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// interleaver lets a test act as a person editing an issue at an exact
// moment of a client's multi-call write: a hook armed for the k-th API
// write to one issue runs just before that write is applied, outside the
// store's lock, so it can change the issue through the Go API (as a human,
// firing webhooks) and the API write then sees the change.
type interleaver struct {
	mu    sync.Mutex
	hooks map[string]*writeHook
}

type writeHook struct {
	left  int // API writes to let pass before running f
	f     func()
	fired *atomic.Bool
}

// BeforeAPIWrite arms f to run once, just before the k-th (counted from 0)
// API write to repo's issue number from now on, in whichever dialect it
// comes; human writes (the Go API, the control API, the page) are not
// counted. The returned func reports whether f has run. Arming again
// replaces an earlier hook of the same issue.
func (s *Sim) BeforeAPIWrite(repo string, number, k int, f func()) (fired func() bool) {
	h := &writeHook{left: k, f: f, fired: new(atomic.Bool)}
	s.store.inter.mu.Lock()
	if s.store.inter.hooks == nil {
		s.store.inter.hooks = map[string]*writeHook{}
	}
	s.store.inter.hooks[hookKey(repo, number)] = h
	s.store.inter.mu.Unlock()
	return h.fired.Load
}

func hookKey(repo string, number int) string { return fmt.Sprintf("%s#%d", repo, number) }

// before runs the hook due at this write of repo#number, if any. It is
// called without the store's lock.
func (in *interleaver) before(repo string, number int, by actor) {
	if by.writer == humanActor.writer {
		return
	}
	in.mu.Lock()
	key := hookKey(repo, number)
	h := in.hooks[key]
	if h != nil && h.left > 0 {
		h.left--
		h = nil
	} else if h != nil {
		delete(in.hooks, key)
	}
	in.mu.Unlock()
	if h != nil {
		h.f()
		h.fired.Store(true)
	}
}
