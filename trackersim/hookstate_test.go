package trackersim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for the sim.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// answering is a receiver that answers every delivery with status and
// counts what it got.
func answering(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// deliverN makes n issue writes in repo and waits for their deliveries.
func deliverN(t *testing.T, s *Sim, repo string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		s.CreateIssue(repo, "write", "")
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestGitLabHookAutoDisable(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	s := New(Options{Clock: clock.Now})
	t.Cleanup(s.Close)
	srv, got := answering(t, http.StatusBadRequest)
	s.AddHook(Hook{Repo: glRepo, URL: srv.URL, Dialect: "gitlab"})

	// Three failures: still enabled. The fourth disables it for a minute.
	deliverN(t, s, glRepo, 3)
	if st := s.HookStates()[0]; st.Failures != 3 || !st.DisabledUntil.IsZero() || st.Disabled || st.LastStatus != 400 {
		t.Fatalf("after 3 failures: %+v", st)
	}
	deliverN(t, s, glRepo, 1)
	st := s.HookStates()[0]
	if st.Failures != 4 || !st.DisabledUntil.Equal(clock.Now().Add(time.Minute)) || st.Disabled {
		t.Fatalf("after 4 failures: %+v, want disabled for 1m", st)
	}
	// While disabled nothing is sent.
	deliverN(t, s, glRepo, 2)
	if st := s.HookStates()[0]; got.Load() != 4 || st.Skipped != 2 {
		t.Fatalf("sent %d, state %+v; want 4 sent and 2 skipped while disabled", got.Load(), st)
	}
	// Each further failure doubles the backoff; the 40th disables for good.
	for i := 5; i <= 40; i++ {
		clock.Add(25 * time.Hour)
		deliverN(t, s, glRepo, 1)
		st := s.HookStates()[0]
		if i == 5 && !st.DisabledUntil.Equal(clock.Now().Add(2*time.Minute)) {
			t.Fatalf("5th failure: %+v, want disabled for 2m", st)
		}
		if st.Disabled != (i == 40) {
			t.Fatalf("after %d failures: Disabled = %v", i, st.Disabled)
		}
	}
	clock.Add(48 * time.Hour)
	deliverN(t, s, glRepo, 1)
	if got.Load() != 40 {
		t.Fatalf("sent %d, want 40: a hook disabled for good gets nothing", got.Load())
	}
	if !s.ReenableHook(s.HookStates()[0].ID) || s.HookStates()[0].Disabled {
		t.Fatal("ReenableHook did not re-enable")
	}
}

func TestGitLabHookAutoDisableVariants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, rule string
		status     int
		disabled   bool // for good after 4 failures
		until      bool // temporarily after 4 failures
	}{
		{"legacy rule, 4xx: disabled for good", HookDisableLegacy, http.StatusNotFound, true, false},
		{"legacy rule, 5xx: backs off", HookDisableLegacy, http.StatusBadGateway, false, true},
		{"current rule, 5xx: backs off", HookDisableCurrent, http.StatusServiceUnavailable, false, true},
		{"off: never disabled", HookDisableOff, http.StatusBadRequest, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
			s := New(Options{Clock: clock.Now})
			t.Cleanup(s.Close)
			srv, _ := answering(t, c.status)
			s.AddHook(Hook{Repo: glRepo, URL: srv.URL, Dialect: "gitlab", AutoDisable: c.rule})
			deliverN(t, s, glRepo, 4)
			st := s.HookStates()[0]
			if st.Failures != 4 || st.Disabled != c.disabled || st.DisabledUntil.IsZero() == c.until {
				t.Fatalf("%+v; want disabled %v, temporarily %v", st, c.disabled, c.until)
			}
		})
	}
	// A success resets the count; GitHub hooks are never disabled.
	s := New(Options{})
	t.Cleanup(s.Close)
	bad, _ := answering(t, http.StatusBadRequest)
	s.AddHook(Hook{Repo: "demo/app", URL: bad.URL})
	deliverN(t, s, "demo/app", 5)
	if st := s.HookStates()[0]; st.Failures < 5 || st.Disabled || !st.DisabledUntil.IsZero() {
		t.Fatalf("GitHub hook: %+v, want failures counted, never disabled", st)
	}
}

func TestSendGitLabWorkItem(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	t.Cleanup(s.Close)
	recv, got := glReceiver(t)
	s.AddHook(Hook{Repo: glRepo, URL: recv.URL, Secret: "s3cret", Dialect: "gitlab"})
	issue := s.CreateIssue(glRepo, "an issue", "")
	iid := s.SendGitLabWorkItem(glRepo, "Task", "a task", "agent-smith")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if iid != issue+1 {
		t.Errorf("task iid %d, want the project's next iid %d", iid, issue+1)
	}
	ds := got()
	if len(ds) != 2 {
		t.Fatalf("deliveries = %d, want 2", len(ds))
	}
	d := ds[1]
	if d.header.Get("X-Gitlab-Event") != "Issue Hook" || d.body.ObjectKind != "work_item" || d.body.EventType != "work_item" ||
		d.body.ObjectAttributes.Type != "Task" || d.body.ObjectAttributes.IID != iid || d.body.ObjectAttributes.Action != "open" ||
		len(d.body.Labels) != 1 || d.body.Labels[0].Title != "agent-smith" {
		t.Fatalf("work item delivery: headers %v body %+v", d.header, d.body)
	}
	if _, err := s.store.get(glRepo, iid); err == nil {
		t.Error("the task is served as an issue; the sim stores issues only")
	}
}
