package trackertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// This file is the live contract suite: the lifecycle's label writes run
// through the real platforms.Tracker against a real tracker project the
// user names in the environment, while a second client with the same
// credentials plays a human editing the same ticket. It is what "works on
// the real service" means for one platform, and the only way to learn that
// the emulator's model of the service still holds. Each platform's
// live_test.go only binds LiveHarness to its SDK; the same binding runs
// against trackersim in an ordinary test, so the suite itself is tested
// without credentials.

// LiveHarness binds RunLive to one tracker project. Every function goes to
// the platform's real API (the platform's SDK, not the tracker under test)
// and is safe to call from several goroutines: the human editor runs
// concurrently with the tracker's writes.
type LiveHarness struct {
	// Platform is the name the tracker puts in Ref.Platform.
	Platform string
	// Tracker is the tracker under test, bound to the project.
	Tracker platforms.Tracker
	// Create makes a scratch ticket with title and labels and returns its
	// ref as the tracker names it. RunLive closes it in a t.Cleanup.
	Create func(ctx context.Context, title string, labels ...string) (platforms.Ref, error)
	// Close closes (or deletes) a scratch ticket.
	Close func(ctx context.Context, ref platforms.Ref) error
	// AddLabel and RemoveLabel are the human's edits: one label at a time,
	// the way a person clicks in the tracker's UI.
	AddLabel    func(ctx context.Context, ref platforms.Ref, label string) error
	RemoveLabel func(ctx context.Context, ref platforms.Ref, label string) error
	// Labels reads the ticket's labels as the tracker stores them.
	Labels func(ctx context.Context, ref platforms.Ref) ([]string, error)
	// Comments reads the bodies of the ticket's comments in whatever form
	// the platform returns them (Markdown, HTML, ADF JSON); RunLive looks
	// for a unique token in them. Nil: a comment is checked only by
	// Comment's error.
	Comments func(ctx context.Context, ref platforms.Ref) ([]string, error)
	// Settle bounds how long a read may lag a write: labels (read replicas)
	// and ListOpen (a search index, such as Jira Cloud's, is eventually
	// consistent). 0 means DefaultSettle.
	Settle time.Duration
	// Poll is how often a lagging read is repeated; 0 means DefaultPoll.
	// Live runs keep it slow: every read spends rate limit.
	Poll time.Duration
}

// Defaults of LiveHarness.Settle and Poll.
const (
	DefaultSettle = 30 * time.Second
	DefaultPoll   = 2 * time.Second
	// liveWriteAttempts bounds the re-read-and-retry of one transition after
	// a conditional write lost to the human editor. The editor makes at most
	// two edits per transition, so three attempts always suffice on a
	// correct tracker.
	liveWriteAttempts = 4
)

// humanLabels are the editor's labels: non-lifecycle, toggled in turn.
// A small fixed pool, so a live run leaves at most these in a project's
// label catalogue.
var humanLabels = []string{"agentsmith-live-human-a", "agentsmith-live-human-b", "agentsmith-live-human-c"}

// LiveVar is one environment variable a platform's live test reads.
type LiveVar struct {
	Name    string // AGENTSMITH_LIVE_GITHUB_REPO
	Example string // what to set it to in the skip message: owner/repo
	// Optional variables are shown in brackets and may be unset.
	Optional bool
}

// LiveEnv reads vars from the process environment. With none of the
// required ones set it skips t with one line saying how to run the test;
// with some but not all set it fails, naming the missing ones (a typo must
// not pass as a skip). pkg and run complete the command line:
// "go test ./platforms/github -run Live -v".
func LiveEnv(t *testing.T, pkg, run string, vars ...LiveVar) map[string]string {
	t.Helper()
	env := map[string]string{}
	var missing, set, usage []string
	for _, v := range vars {
		val, ok := os.LookupEnv(v.Name)
		if ok && val != "" {
			env[v.Name] = val
		}
		switch {
		case v.Optional:
			usage = append(usage, "["+v.Name+"="+v.Example+"]")
		case env[v.Name] == "":
			missing = append(missing, v.Name)
			usage = append(usage, v.Name+"="+v.Example)
		default:
			set = append(set, v.Name)
			usage = append(usage, v.Name+"="+v.Example)
		}
	}
	cmd := strings.Join(usage, " ") + " go test " + pkg + " -run " + run + " -v"
	switch {
	case len(missing) > 0 && len(set) == 0:
		t.Skip("live contract test; run it with: " + cmd)
	case len(missing) > 0:
		t.Fatalf("live contract test: %s set but %s missing; run it with: %s",
			strings.Join(set, ", "), strings.Join(missing, ", "), cmd)
	}
	return env
}

// RunLive runs the live contract on h: two scratch tickets, one taken
// through every transition of a successful run including a hand-back
// (pending → enqueued → in-progress → enqueued → in-progress → done), one
// through a failure with its comment (pending → enqueued → in-progress →
// failed). Around every write the human editor adds or removes a label of
// its own: after the tracker read the ticket (so a conditional write meets a
// stale version), while the write is in flight, and after it. Each
// transition must leave exactly the human's labels plus the one lifecycle
// label, and the listing by lifecycle label must follow within Settle.
func RunLive(t *testing.T, h LiveHarness) {
	t.Helper()
	if h.Settle <= 0 {
		h.Settle = DefaultSettle
	}
	if h.Poll <= 0 {
		h.Poll = DefaultPoll
	}
	run := time.Now().UTC().Format("20060102T150405Z")
	t.Run("DoneWithHandBack", func(t *testing.T) {
		l := newLiveTicket(t, h, "done "+run)
		l.step(pending, enqueued)
		l.listed(enqueued, true)
		l.step(enqueued, inProgress)
		l.listed(inProgress, true)
		l.listed(enqueued, false)
		l.step(inProgress, enqueued) // graceful shutdown hands the run back
		l.step(enqueued, inProgress)
		l.step(inProgress, done)
		l.listed(done, true)
		l.report()
	})
	t.Run("FailedWithComment", func(t *testing.T) {
		l := newLiveTicket(t, h, "failed "+run)
		l.step(pending, enqueued)
		l.step(enqueued, inProgress)
		l.comment("agentsmithd live contract test " + run)
		l.step(inProgress, failed)
		l.report()
	})
}

// liveTicket is one scratch ticket and what the suite expects of it.
type liveTicket struct {
	t   *testing.T
	h   LiveHarness
	ctx context.Context
	ref platforms.Ref

	human     map[string]bool // the human's labels as they must be now
	edits     int             // human edits made
	conflicts int             // tracker writes refused for a stale version
	writes    int
}

func newLiveTicket(t *testing.T, h LiveHarness, name string) *liveTicket {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+3*h.Settle)
	t.Cleanup(cancel)
	start := humanLabels[0]
	ref, err := h.Create(ctx, "agentsmithd live contract test: "+name, start, pending)
	if err != nil {
		t.Fatalf("create a scratch ticket: %v", err)
	}
	t.Logf("scratch ticket %s", ref.ID)
	t.Cleanup(func() {
		// The test's context may be spent; closing must still happen.
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.Close(c, ref); err != nil {
			t.Errorf("clean up scratch ticket %s: %v (close it by hand)", ref.ID, err)
		}
	})
	l := &liveTicket{t: t, h: h, ctx: ctx, ref: ref, human: map[string]bool{start: true}}
	l.expect(pending)
	return l
}

// toggle is one human edit of label: added if the ticket lacks it, removed
// if it has it. It returns the edit's error for the caller to report, so it
// can run on another goroutine.
func (l *liveTicket) toggle(label string) error {
	var err error
	if l.human[label] {
		err = l.h.RemoveLabel(l.ctx, l.ref, label)
	} else {
		err = l.h.AddLabel(l.ctx, l.ref, label)
	}
	if err != nil {
		return fmt.Errorf("human edit of %q on %s: %w", label, l.ref.ID, err)
	}
	l.human[label] = !l.human[label]
	l.edits++
	return nil
}

// step is one lifecycle transition as the daemon makes it: read the
// ticket, write from that snapshot, and on a lost conditional write read
// again and retry. The human edits before, during and after the write.
func (l *liveTicket) step(from, to string) {
	t := l.t
	t.Helper()
	i := l.writes
	l.writes++
	tk := l.get()
	if !tk.HasLabel(from) && from != pending {
		t.Fatalf("%s before %s → %s: labels %q lack %s", l.ref.ID, from, to, tk.Labels, from)
	}
	if err := l.toggle(humanLabels[(i+1)%len(humanLabels)]); err != nil {
		t.Fatal(err)
	}

	// The concurrent edit touches another label than the one above, so the
	// two are independent and the expected end state is known.
	during := humanLabels[(i+2)%len(humanLabels)]
	// l.human is only read and written on this goroutine; wg.Wait orders
	// editErr.
	var (
		wg      sync.WaitGroup
		editErr error
	)
	wantDuring := !l.human[during]
	wg.Add(1)
	go func() {
		defer wg.Done()
		if wantDuring {
			editErr = l.h.AddLabel(l.ctx, l.ref, during)
		} else {
			editErr = l.h.RemoveLabel(l.ctx, l.ref, during)
		}
	}()
	written, err := l.relabel(tk, to)
	wg.Wait()
	if editErr != nil {
		t.Fatalf("human edit of %q during %s → %s: %v", during, from, to, editErr)
	}
	l.human[during] = wantDuring
	l.edits++
	if err != nil {
		t.Fatalf("%s → %s on %s: %v", from, to, l.ref.ID, err)
	}
	if !written.HasLabel(to) || len(lifecycleOf(written.Labels)) != 1 {
		t.Errorf("%s → %s: the tracker returned labels %q, want %s as the only lifecycle label", from, to, written.Labels, to)
	}

	if err := l.toggle(humanLabels[i%len(humanLabels)]); err != nil {
		t.Fatal(err)
	}
	l.expect(to)
}

// relabel writes to from tk, re-reading after each lost conditional write.
func (l *liveTicket) relabel(tk *platforms.Ticket, to string) (*platforms.Ticket, error) {
	for attempt := 1; ; attempt++ {
		written, err := l.h.Tracker.Relabel(l.ctx, tk, lifecycleLabels, to)
		if err == nil {
			return written, nil
		}
		if !errors.Is(err, platforms.ErrPreconditionFailed) || attempt == liveWriteAttempts {
			return nil, fmt.Errorf("attempt %d: %w", attempt, err)
		}
		l.conflicts++
		if tk, err = l.h.Tracker.Get(l.ctx, l.ref); err != nil {
			return nil, fmt.Errorf("re-read after a lost write: %w", err)
		}
	}
}

func (l *liveTicket) get() *platforms.Ticket {
	l.t.Helper()
	tk, err := l.h.Tracker.Get(l.ctx, l.ref)
	if err != nil {
		l.t.Fatalf("Get(%s): %v", l.ref.ID, err)
	}
	if tk.Ref.ID != l.ref.ID || tk.Ref.Platform != l.h.Platform || !tk.Open {
		l.t.Fatalf("Get(%s) = %+v: want the open %s ticket", l.ref.ID, tk.Ref, l.h.Platform)
	}
	return tk
}

// expect waits until the ticket's labels, read through the harness, are
// exactly the human's plus state's (none for a bare pending): every human
// edit kept, only lifecycle labels changed.
func (l *liveTicket) expect(state string) {
	t := l.t
	t.Helper()
	want := []string{state}
	for _, lb := range humanLabels {
		if l.human[lb] {
			want = append(want, lb)
		}
	}
	slices.Sort(want)
	var got []string
	ok := l.waitFor(func() (bool, error) {
		labels, err := l.h.Labels(l.ctx, l.ref)
		got = slices.Sorted(slices.Values(labels))
		return slices.Equal(got, want), err
	})
	if ok {
		return
	}
	var lost, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			lost = append(lost, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	t.Fatalf("%s in state %s: labels %q after %s, want %q (missing %q, unexpected %q)",
		l.ref.ID, state, got, l.h.Settle, want, lost, extra)
}

// listed waits until ListOpen(label) does (or does not) list the ticket.
func (l *liveTicket) listed(label string, want bool) {
	t := l.t
	t.Helper()
	var lastErr error
	ok := l.waitFor(func() (bool, error) {
		list, err := l.h.Tracker.ListOpen(l.ctx, label)
		if err != nil {
			return false, err
		}
		for _, tk := range list {
			if tk.Ref.ID != l.ref.ID {
				continue
			}
			if !tk.Open || !tk.HasLabel(label) {
				lastErr = fmt.Errorf("listed as %+v with labels %q", tk.Ref, tk.Labels)
				return false, nil
			}
			return want, nil
		}
		return !want, nil
	})
	if !ok {
		t.Fatalf("ListOpen(%s) listing %s: want %v within %s (%v)", label, l.ref.ID, want, l.h.Settle, lastErr)
	}
}

// comment posts body with a unique token and, where the harness can read
// comments, waits for it to appear.
func (l *liveTicket) comment(body string) {
	t := l.t
	t.Helper()
	text := "The pipeline failed: exit status 1 after 2s (attempt 1 of 1). " + body + "\n\n```\nlast output — ✓ 日本語\n```"
	if err := l.h.Tracker.Comment(l.ctx, l.ref, text); err != nil {
		t.Fatalf("Comment(%s): %v", l.ref.ID, err)
	}
	if l.h.Comments == nil {
		return
	}
	ok := l.waitFor(func() (bool, error) {
		bodies, err := l.h.Comments(l.ctx, l.ref)
		return slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, body) }), err
	})
	if !ok {
		t.Fatalf("comment %q not found on %s within %s", body, l.ref.ID, l.h.Settle)
	}
}

// waitFor polls cond every Poll until it holds or Settle passes. An error
// of cond fails the test: reads must work, only their freshness may lag.
func (l *liveTicket) waitFor(cond func() (bool, error)) bool {
	l.t.Helper()
	deadline := time.Now().Add(l.h.Settle)
	for {
		ok, err := cond()
		if err != nil {
			l.t.Fatalf("read %s: %v", l.ref.ID, err)
		}
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-time.After(l.h.Poll):
		case <-l.ctx.Done():
			return false
		}
	}
}

func (l *liveTicket) report() {
	l.t.Logf("%s: %d transitions, %d human edits around them, %d writes that lost a race (ErrPreconditionFailed) re-read and retried",
		l.ref.ID, l.writes, l.edits, l.conflicts)
}

// lifecycleOf is the lifecycle labels among labels.
func lifecycleOf(labels []string) []string {
	var out []string
	for _, lb := range labels {
		if slices.Contains(lifecycleLabels, lb) {
			out = append(out, lb)
		}
	}
	return out
}

// RunLiveOnSim runs RunLive with h bound to trackersim s, as each
// platform's TestSimContract does to prove its live binding without
// credentials, and checks what a live run leaves behind: exactly the two
// scratch tickets, both closed. The sim reads its own writes, so reads are
// polled fast and need not wait long.
func RunLiveOnSim(t *testing.T, s *trackersim.Sim, h LiveHarness) {
	t.Helper()
	h.Poll, h.Settle = 10*time.Millisecond, 5*time.Second
	RunLive(t, h)
	issues := s.Issues()
	if len(issues) != 2 {
		t.Errorf("the suite made %d tickets, want 2", len(issues))
	}
	for _, is := range issues {
		if is.Open {
			t.Errorf("scratch ticket %s#%d left open", is.Repo, is.Number)
		}
	}
}
