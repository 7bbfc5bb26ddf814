package lifecycletest

import (
	"slices"
	"sync"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// Recorder is a lifecycle.Observer that keeps every event, for tests that
// assert on what a claim, run or repair reported.
type Recorder struct {
	mu     sync.Mutex
	events []lifecycle.Event
}

// Observe implements lifecycle.Observer.
func (r *Recorder) Observe(ev lifecycle.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// Events returns the events so far, oldest first.
func (r *Recorder) Events() []lifecycle.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Kind returns the events of one kind so far.
func (r *Recorder) Kind(k lifecycle.EventKind) []lifecycle.Event {
	var out []lifecycle.Event
	for _, ev := range r.Events() {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}
