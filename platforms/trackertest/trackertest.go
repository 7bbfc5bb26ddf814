// Package trackertest is the conformance suite every platforms.Tracker and
// platforms.WebhookDecoder must pass, run through the platform's real SDK
// against the emulator (trackersim). The lifecycle relies on exactly
// these properties: labels other than the ones a write names survive it in
// order, also while a person edits them during the write; a stale
// conditional write is refused, and a write that is not conditional keeps
// what others wrote; listing follows pagination; and webhook authentication
// accepts rotated secrets and nothing forged.
package trackertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Harness binds the suite to one platform and its emulator.
type Harness struct {
	// Platform is the name the platform puts in Ref.Platform.
	Platform string
	// New returns a tracker bound to a fresh project for t.
	New func(t *testing.T) platforms.Tracker
	// Create makes a ticket in t's project on the emulator.
	Create func(t *testing.T, title string, labels ...string) platforms.Ref
	// Labels and Comments read the emulator's truth, bypassing the tracker.
	Labels   func(t *testing.T, ref platforms.Ref) []string
	Comments func(t *testing.T, ref platforms.Ref) []string
	// ForeignWrite changes the ticket behind the tracker's back (another
	// writer adding a label), which must invalidate the tracker's version.
	ForeignWrite func(t *testing.T, ref platforms.Ref)
	// Close closes the ticket on the emulator.
	Close func(t *testing.T, ref platforms.Ref)
	// Reactions reads the emulator's reactions on a ticket ("eyes"); nil
	// for platforms whose tracker is not a platforms.Reactor.
	Reactions func(t *testing.T, ref platforms.Ref) []string
	// Block links blocked as blocked by blocker on the emulator (both in
	// t's project).
	Block func(t *testing.T, blocked, blocker platforms.Ref)
	// Webhooks is the platform's decoder.
	Webhooks platforms.WebhookDecoder
	// Sign returns the headers of a delivery of body correctly authenticated
	// with secret.
	Sign func(body []byte, secret string) http.Header
	// EventHeader returns the headers naming event for platforms that carry
	// the event name outside the body (GitHub's X-GitHub-Event); nil where
	// the body names it.
	EventHeader func(event string) http.Header
	// Fixtures is a directory of payload fixtures named <event>.<action>.json
	// (or <event>.json); the expected kind of each comes from fixtureKinds.
	Fixtures string
	// ConditionalWrites says the platform refuses a write from a stale
	// snapshot (Azure DevOps' test /rev); false where writes name single
	// labels and keep everyone else's (GitHub's per-label endpoints, GitLab's
	// add_labels/remove_labels, Jira's label operations).
	ConditionalWrites bool
	// PerLabelWrites says the platform has no single write for a Relabel:
	// one call adds every label, then one call per label removes it
	// (GitHub's issue label endpoints). Elsewhere a Relabel is one write.
	PerLabelWrites bool
	// BeforeWrite arms the emulator to call edit once, just before the k-th
	// (from 0) write the tracker makes to ref from now on, so the suite can
	// act as a person editing the ticket at that exact moment, between the
	// calls of a multi-call write included. fired reports whether edit ran.
	BeforeWrite func(t *testing.T, ref platforms.Ref, k int, edit func()) (fired func() bool)
	// HumanLabel adds (add) or removes a label on the emulator as a person.
	HumanLabel func(t *testing.T, ref platforms.Ref, label string, add bool)
	// PageSize is the emulator's page size for list calls; the suite creates
	// more than two pages of tickets. 0 means 100, GitHub's maximum.
	PageSize int
	// SortedLabels says the platform lists a ticket's labels in its own
	// order (GitLab: sorted by title) rather than in the order they were
	// added, so labels the tracker returns are compared ignoring order. The
	// emulator's truth (Labels) is still compared in order.
	SortedLabels bool
	// FoldsCase says labels are case-insensitive (GitHub labels, Azure
	// DevOps tags; platforms.SameLabel): a case variant of a removed
	// lifecycle label is the same label and goes with it.
	FoldsCase bool
	// SearchLag says the emulator's list (search) lags writes made behind
	// the tracker's back by up to this long, as Jira Cloud's search/jql
	// does: list assertions wait for it, with a deadline, instead of
	// expecting the list to be current at once.
	SearchLag time.Duration
}

// sameLabels compares labels a tracker returned with want: in order, or as
// sets when the platform dictates the order (SortedLabels).
func (h Harness) sameLabels(got, want []string) bool {
	if !h.SortedLabels {
		return slices.Equal(got, want)
	}
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

// fixtureKinds is the expected kind of each fixture, by platform and file
// name without ".json". A fixture missing here fails the suite, so a new
// fixture cannot go untested.
var fixtureKinds = map[string]map[string]platforms.EventKind{
	"github": {
		"ping":                      platforms.EventPing,
		"issues.opened":             platforms.EventTicket,
		"issues.labeled":            platforms.EventTicket,
		"issues.reopened":           platforms.EventTicket,
		"issues.edited":             platforms.EventTicket,
		"issues.unlabeled":          platforms.EventTicket, // a removed trigger cancels
		"issues.closed":             platforms.EventTicket, // a close cancels, and unblocks
		"issues.closed.in-progress": platforms.EventTicket,
		"issues.unlabeled.trigger-while-enqueued": platforms.EventTicket,
		"pull_request.opened":                     platforms.EventIgnored,
		"issue_comment.created":                   platforms.EventComment, // a command may be in it
		"repository.archived":                     platforms.EventRepositories,
		"installation_repositories.added":         platforms.EventRepositories,
	},
	"jira": {
		"issue_created":                      platforms.EventTicket,
		"issue_updated.labeled":              platforms.EventTicket,
		"issue_updated.unlabeled":            platforms.EventTicket,
		"issue_updated.transitioned":         platforms.EventTicket,
		"issue_updated.closed-in-progress":   platforms.EventTicket,
		"issue_updated.untriggered-enqueued": platforms.EventTicket,
		"issue_updated.edited":               platforms.EventIgnored,
		"issue_deleted":                      platforms.EventIgnored,
		"comment_created":                    platforms.EventComment, // a command may be in it
		// An event without an issue (the worklog names only its issueId).
		"worklog_created": platforms.EventIgnored,
		"project_created": platforms.EventRepositories,
	},
	"gitlab": {
		"issue.open":               platforms.EventTicket,
		"issue.reopen":             platforms.EventTicket,
		"issue.update":             platforms.EventTicket,
		"issue.close":              platforms.EventTicket,
		"issue.close.enqueued":     platforms.EventTicket,
		"issue.update.untriggered": platforms.EventTicket,
		"confidential_issue.open":  platforms.EventIgnored,
		// Tasks and epics come as Issue Hook with object_kind work_item
		// (gitlab-org/gitlab#535890): ignored, answered 2xx; an issue sent
		// that way (gitlab-org/gitlab#517947) is still an issue.
		"issue.work_item.task.open":   platforms.EventIgnored,
		"issue.work_item.epic.update": platforms.EventIgnored,
		"issue.work_item.issue.open":  platforms.EventTicket,
		"note.create":                 platforms.EventComment, // a command may be in it
		"merge_request.open":          platforms.EventIgnored,
		"push":                        platforms.EventIgnored,
		// A self-managed instance's system hook: a project created.
		"system.project_create": platforms.EventRepositories,
	},
	"azuredevops": {
		"workitem.created":          platforms.EventTicket,
		"workitem.updated":          platforms.EventTicket,
		"workitem.updated.state":    platforms.EventTicket,
		"workitem.updated.closed":   platforms.EventTicket,
		"workitem.updated.assigned": platforms.EventIgnored,
		// A subscription whose "Resource details to send" is Minimal: the
		// update without its revision. The exact shape is not documented
		// (the sample payloads are all "All"); this one keeps the
		// envelope and the resource's identifying members.
		"workitem.updated.minimal": platforms.EventIgnored,
		"workitem.commented":       platforms.EventComment, // a command may be in it
		"workitem.deleted":         platforms.EventIgnored,
		"git.push":                 platforms.EventIgnored,
	},
}

// Lifecycle labels as the default prefix spells them, and look-alikes a
// relabel must leave alone.
const (
	pending    = "agent-smith:pending"
	enqueued   = "agent-smith:enqueued"
	inProgress = "agent-smith:in-progress"
	done       = "agent-smith:done"
	failed     = "agent-smith:failed"
)

var lifecycleLabels = []string{pending, enqueued, inProgress, done, failed}

// Run runs the suite. Every subtest gets its own project through h.New.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"Get", testGet},
		{"RelabelPreservesOtherLabels", testRelabelPreserves},
		{"RelabelReturnsNewVersion", testRelabelNewVersion},
		{"RelabelStaleVersion", testRelabelStale},
		{"RelabelRace", testRelabelRace},
		{"ConcurrentHumanEditor", testConcurrentHumanEditor},
		{"TwoLabelMove", testTwoLabelMove},
		{"Comment", testComment},
		{"EditComment", testEditComment},
		{"React", testReact},
		{"ListOpen", testListOpen},
		{"OpenBlockers", testOpenBlockers},
		{"WebhookVerify", testWebhookVerify},
		{"WebhookParseFixtures", testWebhookParse},
		{"WebhookParseNeverPanics", testWebhookNoPanic},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// testReact: reacting twice leaves one reaction and is no error either
// time (a reclaimed ticket is reacted to again).
func testReact(t *testing.T, h Harness) {
	tr := h.New(t)
	r, ok := tr.(platforms.Reactor)
	if !ok || h.Reactions == nil {
		if ok != (h.Reactions != nil) {
			t.Fatalf("tracker is a Reactor: %v, but harness Reactions set: %v", ok, h.Reactions != nil)
		}
		t.Skip("platform has no reactions")
	}
	ref := h.Create(t, "React to me", pending)
	for i := range 2 {
		if err := r.React(ctx(t), ref, platforms.ReactionEyes); err != nil {
			t.Fatalf("React #%d: %v", i+1, err)
		}
	}
	if got := h.Reactions(t, ref); len(got) != 1 || got[0] != platforms.ReactionEyes {
		t.Errorf("reactions = %q, want one %q", got, platforms.ReactionEyes)
	}
	if got := h.Labels(t, ref); len(got) != 1 || got[0] != pending {
		t.Errorf("labels changed to %q", got)
	}
}

// testOpenBlockers: the readiness capability lists exactly the open
// blockers, by their ticket ids, and forgets each as it closes.
func testOpenBlockers(t *testing.T, h Harness) {
	tr := h.New(t)
	br, ok := tr.(platforms.BlockerReader)
	if !ok {
		t.Fatalf("%T does not implement platforms.BlockerReader", tr)
	}
	blocked := h.Create(t, "blocked")
	a, b := h.Create(t, "blocker a"), h.Create(t, "blocker b")
	free := h.Create(t, "free")
	h.Block(t, blocked, a)
	h.Block(t, blocked, b)
	check := func(ref platforms.Ref, want ...string) {
		t.Helper()
		got, err := br.OpenBlockers(ctx(t), ref)
		if err != nil {
			t.Fatalf("OpenBlockers(%s): %v", ref.ID, err)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Fatalf("OpenBlockers(%s) = %q, want %q", ref.ID, got, want)
		}
	}
	check(blocked, a.ID, b.ID)
	check(free)
	check(a) // the link has a direction
	h.Close(t, a)
	check(blocked, b.ID)
	h.Close(t, b)
	check(blocked)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func testGet(t *testing.T, h Harness) {
	tr := h.New(t)
	ref := h.Create(t, "Read me", "bug", pending)
	tk, err := tr.Get(ctx(t), ref)
	if err != nil {
		t.Fatalf("Get(%s): %v", ref, err)
	}
	if tk.Ref.Platform != h.Platform || tk.Ref.ID != ref.ID {
		t.Errorf("Ref = %+v, want platform %q id %q", tk.Ref, h.Platform, ref.ID)
	}
	if tk.Title != "Read me" || !tk.Open {
		t.Errorf("Title %q Open %v, want \"Read me\" true", tk.Title, tk.Open)
	}
	if want := []string{"bug", pending}; !h.sameLabels(tk.Labels, want) {
		t.Errorf("Labels = %q, want %q", tk.Labels, want)
	}
	if !tk.HasLabel(pending) {
		t.Errorf("HasLabel(%q) false", pending)
	}
	if h.ConditionalWrites && tk.Version == "" {
		t.Errorf("Version empty on a platform with conditional writes")
	}
}

func testRelabelPreserves(t *testing.T, h Harness) {
	tr := h.New(t)
	start := []string{"bug", "日本語", "Agent-Smith:done", pending, "other-prefix:enqueued", "agent-smith-x:done", "zeta"}
	ref := h.Create(t, "Keep my labels", start...)
	tk := mustGet(t, tr, ref)

	got, err := tr.Relabel(ctx(t), tk, lifecycleLabels, enqueued)
	if err != nil {
		t.Fatalf("Relabel: %v", err)
	}
	want := []string{"bug", "日本語", "Agent-Smith:done", "other-prefix:enqueued", "agent-smith-x:done", "zeta", enqueued}
	if h.FoldsCase {
		want = slices.DeleteFunc(want, func(l string) bool { return l == "Agent-Smith:done" })
	}
	if !h.sameLabels(got.Labels, want) {
		t.Errorf("returned labels = %q, want %q", got.Labels, want)
	}
	if truth := h.Labels(t, ref); !slices.Equal(truth, want) {
		t.Errorf("emulator labels = %q, want %q", truth, want)
	}

	// Removing everything of ours and adding nothing leaves only theirs.
	got, err = tr.Relabel(ctx(t), got, lifecycleLabels, "")
	if err != nil {
		t.Fatalf("Relabel to none: %v", err)
	}
	want = want[:len(want)-1]
	if truth := h.Labels(t, ref); !slices.Equal(truth, want) || !h.sameLabels(got.Labels, want) {
		t.Errorf("after removing ours: emulator %q returned %q, want %q", truth, got.Labels, want)
	}

	// Adding a label already present does not duplicate it.
	got, err = tr.Relabel(ctx(t), got, nil, "bug")
	if err != nil {
		t.Fatalf("Relabel add present: %v", err)
	}
	if truth := h.Labels(t, ref); !slices.Equal(truth, want) || !h.sameLabels(got.Labels, want) {
		t.Errorf("after re-adding bug: emulator %q returned %q, want %q", truth, got.Labels, want)
	}
}

func testRelabelNewVersion(t *testing.T, h Harness) {
	tr := h.New(t)
	ref := h.Create(t, "Versions", pending)
	tk := mustGet(t, tr, ref)
	next, err := tr.Relabel(ctx(t), tk, []string{pending}, enqueued)
	if err != nil {
		t.Fatalf("Relabel: %v", err)
	}
	if h.ConditionalWrites && (next.Version == "" || next.Version == tk.Version) {
		t.Errorf("version after write = %q, before %q: want a new one", next.Version, tk.Version)
	}
	if next.Ref.ID != ref.ID || next.Title != "Versions" {
		t.Errorf("returned ticket %+v does not describe %s", next, ref)
	}
	// The returned ticket is good for the next write without a read.
	last, err := tr.Relabel(ctx(t), next, []string{enqueued}, inProgress)
	if err != nil {
		t.Fatalf("chained Relabel with the returned version: %v", err)
	}
	if truth := h.Labels(t, ref); !slices.Equal(truth, []string{inProgress}) || !slices.Equal(last.Labels, truth) {
		t.Errorf("emulator labels %q, returned %q, want [%s]", truth, last.Labels, inProgress)
	}
}

func testRelabelStale(t *testing.T, h Harness) {
	tr := h.New(t)
	ref := h.Create(t, "Stale", pending)
	tk := mustGet(t, tr, ref)
	h.ForeignWrite(t, ref)
	foreign := h.Labels(t, ref)

	_, err := tr.Relabel(ctx(t), tk, []string{pending}, enqueued)
	if !h.ConditionalWrites {
		// Writes name single labels: the stale snapshot's write goes
		// through and keeps what the other writer did.
		if err != nil {
			t.Fatalf("Relabel from a stale snapshot on a platform without conditional writes: %v", err)
		}
		want := append(slices.DeleteFunc(slices.Clone(foreign), func(l string) bool { return l == pending }), enqueued)
		if truth := h.Labels(t, ref); !h.sameLabels(truth, want) {
			t.Errorf("labels after a write from a stale snapshot = %q, want %q (the other writer's kept)", truth, want)
		}
		return
	}
	if !errors.Is(err, platforms.ErrPreconditionFailed) {
		t.Fatalf("stale Relabel err = %v, want ErrPreconditionFailed", err)
	}
	if truth := h.Labels(t, ref); !slices.Equal(truth, foreign) {
		t.Errorf("stale write changed labels: %q, want the foreign writer's %q", truth, foreign)
	}
	// A fresh read succeeds and keeps the foreign writer's label.
	fresh := mustGet(t, tr, ref)
	if _, err := tr.Relabel(ctx(t), fresh, []string{pending}, enqueued); err != nil {
		t.Fatalf("Relabel after re-read: %v", err)
	}
	for _, l := range foreign {
		if l != pending && !slices.Contains(h.Labels(t, ref), l) {
			t.Errorf("foreign label %q lost", l)
		}
	}
}

// testRelabelRace: writers holding the same snapshot write at once. On a
// conditional platform exactly one wins; elsewhere each either wins or is
// told it lost (ErrPreconditionFailed), and no winner's label is lost.
func testRelabelRace(t *testing.T, h Harness) {
	tr := h.New(t)
	ref := h.Create(t, "Race", pending)
	tk := mustGet(t, tr, ref)
	const writers = 8
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		wins, lost     int
		unexpectedErrs []error
	)
	c := ctx(t)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			snap := *tk
			snap.Labels = slices.Clone(tk.Labels)
			_, err := tr.Relabel(c, &snap, []string{pending}, fmt.Sprintf("writer-%d", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, platforms.ErrPreconditionFailed):
				lost++
			default:
				unexpectedErrs = append(unexpectedErrs, err)
			}
		}(i)
	}
	wg.Wait()
	if !h.ConditionalWrites {
		if wins == 0 || wins+lost != writers || len(unexpectedErrs) > 0 {
			t.Fatalf("wins=%d lost=%d errors=%v, want every writer to win or lose cleanly", wins, lost, unexpectedErrs)
		}
		got := h.Labels(t, ref)
		n := 0
		for _, l := range got {
			if strings.HasPrefix(l, "writer-") {
				n++
			}
		}
		if n < wins || slices.Contains(got, pending) {
			t.Errorf("labels after race = %q: %d winners' labels, want all %d and no %s", got, n, wins, pending)
		}
		return
	}
	if wins != 1 || lost != writers-1 || len(unexpectedErrs) > 0 {
		t.Fatalf("wins=%d lost=%d errors=%v, want exactly one winner", wins, lost, unexpectedErrs)
	}
	if truth := h.Labels(t, ref); len(truth) != 1 || !strings.HasPrefix(truth[0], "writer-") {
		t.Errorf("labels after race = %q, want one writer's", truth)
	}
}

func testComment(t *testing.T, h Harness) {
	tr := h.New(t)
	ref := h.Create(t, "Talk to me")
	body := "Pipeline run `42` queued — 日本語 **ok**"
	if err := tr.Comment(ctx(t), ref, body); err != nil {
		t.Fatalf("Comment: %v", err)
	}
	if got := h.Comments(t, ref); !slices.Contains(got, body) {
		t.Errorf("comments = %q, want one %q", got, body)
	}
}

// testEditComment: a comment posted through platforms.CommentEditor is
// edited in place (one comment, the new body), and an unknown id is
// ErrNotFound, the answer a person's deletion of the comment gives.
func testEditComment(t *testing.T, h Harness) {
	tr := h.New(t)
	ed, ok := tr.(platforms.CommentEditor)
	if !ok {
		t.Fatalf("%T is not a platforms.CommentEditor", tr)
	}
	ref := h.Create(t, "edit comment")
	id, err := ed.AddComment(ctx(t), ref, "progress: step 1")
	if err != nil || id == "" {
		t.Fatalf("AddComment: id %q, %v", id, err)
	}
	if err := ed.EditComment(ctx(t), ref, id, "progress: step 2\n\nsecond line"); err != nil {
		t.Fatalf("EditComment: %v", err)
	}
	got := h.Comments(t, ref)
	if len(got) != 1 || !strings.Contains(got[0], "step 2") || strings.Contains(got[0], "step 1") {
		t.Errorf("comments after the edit: %q, want the one comment with the new body", got)
	}
	if err := ed.EditComment(ctx(t), ref, "99999999", "x"); !errors.Is(err, platforms.ErrNotFound) {
		t.Errorf("EditComment of an unknown id: %v, want ErrNotFound", err)
	}
}

func testListOpen(t *testing.T, h Harness) {
	tr := h.New(t)
	page := h.PageSize
	if page <= 0 {
		page = 100
	}
	var want []string
	for i := 0; i < 2*page+1; i++ {
		ref := h.Create(t, fmt.Sprintf("Listed %d", i), "bug", pending)
		want = append(want, ref.ID)
	}
	h.Create(t, "Other label", enqueued)
	h.Create(t, "No labels")
	for i := 0; i < 2; i++ {
		h.Close(t, h.Create(t, fmt.Sprintf("Closed %d", i), pending))
	}

	sort.Strings(want)
	var got []*platforms.Ticket
	var ids []string
	list := func() bool {
		var err error
		got, err = tr.ListOpen(ctx(t), pending)
		if err != nil {
			t.Fatalf("ListOpen: %v", err)
		}
		ids = ids[:0]
		for _, tk := range got {
			ids = append(ids, tk.Ref.ID)
		}
		sort.Strings(ids)
		return slices.Equal(ids, want)
	}
	if h.SearchLag > 0 {
		// A lagging search converges on the truth.
		eventually.Wait(t, h.SearchLag+10*time.Second, "the list to show every labelled ticket", list)
	} else {
		list() // anything else must be right the first time
	}
	for _, tk := range got {
		if tk.Ref.Platform != h.Platform || !tk.Open || !tk.HasLabel(pending) {
			t.Errorf("listed %+v: want an open %s ticket labelled %s", tk, h.Platform, pending)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("ListOpen returned %d tickets, want the %d open labelled ones\n got %q\nwant %q", len(ids), len(want), ids, want)
	}
}

func testWebhookVerify(t *testing.T, h Harness) {
	body := []byte(`{"action":"opened","note":"signed"}`)
	secrets := func(s ...string) [][]byte {
		var out [][]byte
		for _, v := range s {
			out = append(out, []byte(v))
		}
		return out
	}
	cases := []struct {
		name    string
		header  http.Header
		secrets [][]byte
		want    int // -1: ErrUnauthenticated
	}{
		{"good", h.Sign(body, "s3cret"), secrets("s3cret"), 0},
		{"forged", h.Sign(body, "guess"), secrets("s3cret"), -1},
		{"missing", http.Header{}, secrets("s3cret"), -1},
		{"no secrets configured", h.Sign(body, "s3cret"), nil, -1},
		{"rotated: old secret second", h.Sign(body, "old"), secrets("new", "old"), 1},
		{"rotated: new secret first", h.Sign(body, "new"), secrets("new", "old"), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := h.Webhooks.Verify(c.header, body, c.secrets)
			if c.want < 0 {
				if !errors.Is(err, platforms.ErrUnauthenticated) {
					t.Fatalf("Verify = %d, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Verify = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

// fixture is one payload file and the headers a delivery of it carries.
type fixture struct {
	base, event string
	body        []byte
	header      http.Header
}

func loadFixtures(t *testing.T, h Harness) []fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(h.Fixtures, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in %s (%v)", h.Fixtures, err)
	}
	var out []fixture
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		event, _, _ := strings.Cut(base, ".")
		hdr := h.Sign(body, "fixture-secret")
		if h.EventHeader != nil {
			for k, vs := range h.EventHeader(event) {
				hdr.Del(k)
				for _, v := range vs {
					hdr.Add(k, v)
				}
			}
		}
		out = append(out, fixture{base: base, event: event, body: body, header: hdr})
	}
	return out
}

func testWebhookParse(t *testing.T, h Harness) {
	kinds := fixtureKinds[h.Platform]
	for _, f := range loadFixtures(t, h) {
		t.Run(f.base, func(t *testing.T) {
			want, ok := kinds[f.base]
			if !ok {
				t.Fatalf("fixture %s has no expected kind in trackertest.fixtureKinds[%q]", f.base, h.Platform)
			}
			if _, err := h.Webhooks.Verify(f.header, f.body, [][]byte{[]byte("fixture-secret")}); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			ev, err := h.Webhooks.Parse(f.header, f.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if ev.Kind != want {
				t.Fatalf("Kind = %d, want %d (%s)", ev.Kind, want, ev)
			}
			if ev.Kind != platforms.EventTicket {
				return
			}
			tk := ev.Ticket
			if tk == nil || tk.Ref.Platform != h.Platform || tk.Ref.ID == "" || tk.Title == "" || tk.URL == "" {
				t.Fatalf("ticket %+v: want platform %q, an ID, a title and a URL", tk, h.Platform)
			}
			if ev.Locator == "" {
				t.Errorf("Locator empty")
			}
			if tk.Labels == nil {
				t.Errorf("Labels nil, want a (possibly empty) list")
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		for _, f := range loadFixtures(t, h) {
			if fixtureKinds[h.Platform][f.base] != platforms.EventTicket {
				continue
			}
			for _, body := range []string{"{not json", `{"action":`, "[1,2]"} {
				if _, err := h.Webhooks.Parse(f.header, []byte(body)); !errors.Is(err, platforms.ErrMalformed) {
					t.Errorf("Parse(%s headers, %q) err = %v, want ErrMalformed", f.base, body, err)
				}
			}
			return
		}
		t.Fatalf("no ticket fixture to derive headers from")
	})
}

// testWebhookNoPanic feeds every prefix of every fixture: a receiver must
// answer a truncated delivery with an error, never crash.
func testWebhookNoPanic(t *testing.T, h Harness) {
	for _, f := range loadFixtures(t, h) {
		for n := 0; n < len(f.body); n += 1 + n/16 {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Parse panicked on %s[:%d]: %v", f.base, n, r)
					}
				}()
				_, _ = h.Webhooks.Parse(f.header, f.body[:n])
			}()
		}
	}
}

func mustGet(t *testing.T, tr platforms.Tracker, ref platforms.Ref) *platforms.Ticket {
	t.Helper()
	tk, err := tr.Get(ctx(t), ref)
	if err != nil {
		t.Fatalf("Get(%s): %v", ref, err)
	}
	return tk
}
