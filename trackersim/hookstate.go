package trackersim

import (
	"net/http"
	"sync"
	"time"
)

// GitLab disables a webhook that keeps failing. The current rule
// (gitlab-org/gitlab!166329, which closed gitlab-org/gitlab#396577): any
// failure counts (a 4xx, a 5xx, a timeout); after 4 consecutive failures the
// hook is disabled temporarily, for a backoff that starts at 1 minute and
// doubles with each further failure up to 24 hours
// (gitlab-org/gitlab#462719); after 40 consecutive failures it is disabled
// for good, until a maintainer re-enables it. Any success resets the count.
// Before that MR, 4 consecutive 4xx answers disabled a hook for good at
// once and only 5xx backed off: HookDisableLegacy. The auto-disabling runs
// on GitLab.com; on self-managed instances it is behind a feature flag that
// is off by default (gitlab-org/gitlab#462719): HookDisableOff. Deliveries
// a disabled hook would have got are not sent and not queued; GitLab does
// not redeliver them either.
const (
	// HookDisableCurrent is the current rule, the default.
	HookDisableCurrent = ""
	// HookDisableLegacy is the rule of releases before gitlab-org/gitlab!166329.
	HookDisableLegacy = "legacy"
	// HookDisableOff never disables (self-managed without the feature flag).
	HookDisableOff = "off"
)

// GitLab's auto-disabling thresholds and backoff.
const (
	glTemporaryAfter   = 4
	glPermanentAfter   = 40
	glInitialBackoff   = time.Minute
	glMaxBackoff       = 24 * time.Hour
	glBackoffGrowthPow = 2
)

// HookState is what the tracker knows about one hook's recent deliveries:
// what GitLab shows on its webhook page ("Failed to connect", "Webhook
// disabled"). Only GitLab hooks are ever disabled.
type HookState struct {
	ID      int64  `json:"id"`
	Repo    string `json:"repo"`
	URL     string `json:"url"`
	Dialect string `json:"dialect"`
	// Failures counts consecutive failed deliveries; a success resets it.
	Failures int `json:"failures"`
	// LastStatus is the HTTP status of the last delivery (0: no answer).
	LastStatus int `json:"last_status"`
	// DisabledUntil is set while the hook is temporarily disabled.
	DisabledUntil time.Time `json:"disabled_until,omitzero"`
	// Disabled is true once the hook is disabled for good.
	Disabled bool `json:"disabled"`
	// Skipped counts deliveries not sent because the hook was disabled.
	Skipped int `json:"skipped"`
}

// hookHealth is a hookQueue's delivery record and disabling state.
type hookHealth struct {
	mu    sync.Mutex
	state HookState
}

// admit reports whether a delivery may be sent now; a delivery refused is
// counted as skipped.
func (h *hookHealth) admit(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state.Disabled || now.Before(h.state.DisabledUntil) {
		h.state.Skipped++
		return false
	}
	return true
}

// record applies one delivery's outcome under the hook's rule.
func (h *hookHealth) record(now time.Time, hook Hook, status int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &h.state
	st.LastStatus = status
	if ok {
		st.Failures, st.DisabledUntil = 0, time.Time{}
		return
	}
	st.Failures++
	if hook.Dialect != "gitlab" || hook.AutoDisable == HookDisableOff {
		return
	}
	if hook.AutoDisable == HookDisableLegacy {
		if st.Failures >= glTemporaryAfter && status >= 400 && status < 500 {
			st.Disabled = true
			return
		}
	} else if st.Failures >= glPermanentAfter {
		st.Disabled = true
		return
	}
	if st.Failures >= glTemporaryAfter {
		backoff := glInitialBackoff
		for i := glTemporaryAfter; i < st.Failures && backoff < glMaxBackoff; i++ {
			backoff *= glBackoffGrowthPow
		}
		st.DisabledUntil = now.Add(min(backoff, glMaxBackoff))
	}
}

func (h *hookHealth) get() HookState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// HookStates returns every hook's delivery record, in the order the hooks
// were added, so a test can assert a receiver never got a hook disabled.
func (s *Sim) HookStates() []HookState {
	hs := &s.hooks
	hs.mu.Lock()
	list := append([]*hookQueue(nil), hs.list...)
	hs.mu.Unlock()
	out := make([]HookState, 0, len(list))
	for _, q := range list {
		st := q.health.get()
		st.ID, st.Repo, st.URL, st.Dialect = q.id, q.hook.Repo, q.hook.URL, q.hook.Dialect
		out = append(out, st)
	}
	return out
}

// ReenableHook clears a hook's failures and disabled state, as a
// maintainer's "Enable" button on GitLab's webhook page does.
func (s *Sim) ReenableHook(id int64) bool {
	hs := &s.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, q := range hs.list {
		if q.id == id {
			q.health.mu.Lock()
			q.health.state = HookState{}
			q.health.mu.Unlock()
			return true
		}
	}
	return false
}

func (s *Sim) ctlHookStates(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.HookStates())
}
