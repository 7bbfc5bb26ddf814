package statuspage

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// writeEvents appends evs to the audit stream through the real Writer and
// waits until Redis has them all.
func writeEvents(t *testing.T, w *audit.Writer, evs []lifecycle.Event) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for _, ev := range evs {
		w.Observe(ev)
	}
	eventually.Wait(t, 10*time.Second, fmt.Sprintf("the audit writer to write %d events", len(evs)), func() bool {
		select {
		case err := <-done:
			t.Fatalf("writer stopped: %v", err)
		default:
		}
		return w.Written() >= uint64(len(evs))
	})
	cancel()
	<-done
	if w.Written() != uint64(len(evs)) {
		t.Fatalf("audit writer wrote %d of %d events", w.Written(), len(evs))
	}
}

// The charts count what the audit stream says finished in each hour and
// the lead time from claim to finish; the ticket page shows a ticket's
// transitions, its attempts with their output tail (escaped) and result,
// and its links. A hostile ticket id is text everywhere.
func TestChartsAndTicketPage(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	now := time.Now()
	hour := now.Truncate(time.Hour)
	ref := platforms.Ref{Platform: "github", Project: "app", ID: "acme/app#1"}
	evil := platforms.Ref{Platform: "github", Project: "app", ID: `acme/app#9"><script>alert(1)</script>`}
	tr := func(ref platforms.Ref, at time.Time, from, to lifecycle.State, attempt int) lifecycle.Event {
		ev := lifecycle.Event{Kind: lifecycle.EventTransition, At: at, Ref: ref, From: from, To: to, Attempt: attempt,
			Instance: "replica-a", Outcome: "ok"}
		if from == lifecycle.InProgress {
			ev.Run = 90 * time.Second
		}
		return ev
	}
	claimA := hour.Add(-3*time.Hour + 5*time.Minute)
	claimB := hour.Add(-time.Hour + time.Minute)
	writeEvents(t, audit.NewWriter(rdb, audit.WriterConfig{}), []lifecycle.Event{
		tr(ref, claimA, lifecycle.Pending, lifecycle.Enqueued, 0),
		tr(ref, claimA.Add(time.Minute), lifecycle.Enqueued, lifecycle.InProgress, 1),
		tr(ref, claimA.Add(3*time.Minute), lifecycle.InProgress, lifecycle.Failed, 1),
		tr(ref, claimB, lifecycle.Pending, lifecycle.Enqueued, 0),
		tr(ref, claimB.Add(time.Minute), lifecycle.Enqueued, lifecycle.InProgress, 2),
		tr(ref, claimB.Add(10*time.Minute), lifecycle.InProgress, lifecycle.Done, 2),
		tr(evil, claimB.Add(2*time.Minute), lifecycle.Pending, lifecycle.Enqueued, 0),
		tr(evil, claimB.Add(4*time.Minute), lifecycle.InProgress, lifecycle.Done, 1),
	})
	logRoot := t.TempDir()
	for n, out := range map[int]string{1: "<b>boom</b>: the widget exploded\n", 2: strings.Repeat("x", 5000) + "\nall good\n"} {
		p := filepath.Join(logRoot, "attempt.log"+string(rune('0'+n)))
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runstate.RecordRunLog(t.Context(), rdb, ref, runstate.RunLog{Attempt: n, Instance: "replica-a", Path: p, Started: claimA}); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{RDB: rdb, Queue: testQueue(rdb), Instance: "replica-a", Token: "s3cret", LogRoots: []string{logRoot}})

	page := get(t, h, "/status", "Bearer s3cret").Body.String()
	for _, want := range []string{`id="chart-throughput"`, `id="chart-lead"`,
		hour.Add(-3*time.Hour).UTC().Format("15:04") + " UTC: 0 done, 1 failed",
		hour.Add(-time.Hour).UTC().Format("15:04") + " UTC: 2 done, 0 failed",
		"median 3 m 0 s over 1 ticket(s)", // ticket A: claim to Failed
		"median 10 m 0 s over 2 ticket(s), longest 10 m 0 s"} {
		if !strings.Contains(page, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a ticket id reached the page as HTML")
	}

	body := get(t, h, "/status/ticket?ticket="+url.QueryEscape("github:acme/app#1"), "Bearer s3cret").Body.String()
	for _, want := range []string{
		`<rect class="s-enqueued"`, `<rect class="s-in-progress"`, `<rect class="s-failed"`, `<rect class="s-done"`,
		`id="attempt-1"`, `&lt;b&gt;boom&lt;/b&gt;: the widget exploded`, // the tail, as text
		`id="attempt-2"`, "all good", "last 4096 of 5010 bytes", "ran 1 m 30 s",
		`href="/status/logs?attempt=2&amp;run=1&amp;ticket=github%3Aacme%2Fapp%231"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("ticket page lacks %q", want)
		}
	}
	if got := strings.Count(body, `<tr><td>`); got != 6 {
		t.Errorf("ticket page history has %d rows, want the 6 transitions", got)
	}
	evilPage := get(t, h, "/status/ticket?ticket="+url.QueryEscape("github:"+evil.ID), "Bearer s3cret").Body.String()
	if strings.Contains(evilPage, "<script>alert(1)") || !strings.Contains(evilPage, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("hostile id not escaped on its page:\n%s", evilPage)
	}
	if rec := get(t, h, "/status/ticket?ticket=nocolon", "Bearer s3cret"); rec.Code != 400 {
		t.Errorf("bad ticket parameter: %d, want 400", rec.Code)
	}
}

// An in-progress ticket whose run lost its heartbeat to a Redis restart
// says on its page that it waits for the restart grace and until when;
// once the grace is over, that the stale job detector reverts it next;
// and while a run holds its heartbeat, when that heartbeat expires.
func TestTicketPageSaysWhyAnInProgressTicketWaits(t *testing.T) {
	r := redistest.Start(t) // just started: its uptime is inside the grace
	rdb := r.Client(t)
	ref := platforms.Ref{Platform: "github", Project: "app", ID: "acme/app#3"}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	writeEvents(t, audit.NewWriter(rdb, audit.WriterConfig{}), []lifecycle.Event{
		{Kind: lifecycle.EventTransition, At: now.Add(-time.Minute), Ref: ref, From: lifecycle.Pending, To: lifecycle.Enqueued},
		{Kind: lifecycle.EventTransition, At: now.Add(-30 * time.Second), Ref: ref, From: lifecycle.Enqueued, To: lifecycle.InProgress, Attempt: 1},
	})
	page := func(grace time.Duration) string {
		h := New(Config{RDB: rdb, Queue: testQueue(rdb), Instance: "replica-a", Token: "s3cret", RestartGrace: grace,
			Clock: func() time.Time { return now }})
		return get(t, h, "/status/ticket?ticket="+url.QueryEscape("github:"+ref.ID), "Bearer s3cret").Body.String()
	}
	body := page(time.Hour)
	var at []string // the grace ends an hour and a second after Redis started, by INFO's whole seconds
	for up := range 5 {
		at = append(at, now.Add(time.Hour+time.Second-time.Duration(up)*time.Second).Format(time.TimeOnly))
	}
	found := false
	for _, a := range at {
		found = found || strings.Contains(body, "runs resume after the restart grace (1h0m0s), at "+a+" UTC")
	}
	if !strings.Contains(body, `id="wait"`) || !strings.Contains(body, "Redis restarted") || !found {
		t.Errorf("inside the restart grace, the ticket page does not say it waits for the grace to end at one of %q:\n%s", at, body)
	}
	if body := page(0); !strings.Contains(body, "no run holds its heartbeat: the stale job detector reverts it") {
		t.Errorf("past the restart grace, the ticket page does not say the detector reverts it next:\n%s", body)
	}
	rec := runstate.Record{Ref: ref, Instance: "replica-a", Token: "replica-a|webhook|0|t", Attempt: 1}
	if took, err := runstate.Take(t.Context(), rdb, rec, runstate.TakeArgs{TTL: 2 * time.Minute, Now: time.Now()}); err != nil || took.Result != runstate.Taken {
		t.Fatalf("take: %v %v", took, err)
	}
	if body := page(time.Hour); !strings.Contains(body, "a run holds the heartbeat, which expires at ") || strings.Contains(body, "Redis restarted") {
		t.Errorf("with a run holding the heartbeat, the ticket page does not say when it expires:\n%s", body)
	}
}
