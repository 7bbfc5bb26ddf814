package jira_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// On Jira Cloud a label write answers with the whole ticket as written
// (returnIssue): what a person did to the issue since the snapshot shows
// in it, and a lifecycle label another writer moved makes the write
// ErrPreconditionFailed. Data Center's edit answers 204, so its Relabel
// answers with the computed labels, not Whole, and a caller reads
// (AnswersWhole false).
func TestRelabelAnswer(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	for _, c := range []struct {
		deployment, email string
		whole             bool
	}{
		{jira.DeploymentCloud, "bot@example.com", true},
		{jira.DeploymentDataCenter, "", false},
	} {
		t.Run(c.deployment, func(t *testing.T) {
			s, url := newSim(t)
			if !c.whole {
				s.SetJiraDeployment(trackersim.JiraDataCenter)
			}
			tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "ANS", Token: simToken, Email: c.email,
				Deployment: c.deployment, Locker: redisLocker{rdb: rdb}})
			if err != nil {
				t.Fatal(err)
			}
			if tr.AnswersWhole() != c.whole {
				t.Fatalf("AnswersWhole = %v, want %v", tr.AnswersWhole(), c.whole)
			}
			n := s.CreateIssue("ANS", "Answer me", "the body", "agent-smith", "agent-smith:pending")
			ref := platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("ANS", n)}
			snap, err := tr.Get(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			// A person labels and closes the issue after the snapshot.
			if err := s.EditLabel("ANS", n, "human", true); err != nil {
				t.Fatal(err)
			}
			if err := s.SetOpen("ANS", n, false); err != nil {
				t.Fatal(err)
			}
			got, err := tr.Relabel(ctx, snap, []string{"agent-smith:pending"}, "agent-smith:enqueued")
			if err != nil {
				t.Fatal(err)
			}
			if got.Whole != c.whole {
				t.Errorf("Whole = %v, want %v", got.Whole, c.whole)
			}
			if c.whole && (got.Open || got.Title != "Answer me" || got.Body != "the body" || got.Ref != ref ||
				!slices.Equal(got.Labels, []string{"agent-smith", "human", "agent-smith:enqueued"})) {
				t.Errorf("answer %+v: want the issue as written, closed, with the person's label", got)
			}
			if !c.whole && (!got.Open || !slices.Equal(got.Labels, []string{"agent-smith", "agent-smith:enqueued"})) {
				t.Errorf("answer %+v: want the snapshot with the edit applied", got)
			}

			// Another writer moves the lifecycle after the next snapshot.
			snap, err = tr.Get(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.EditLabel("ANS", n, "agent-smith:failed", true); err != nil {
				t.Fatal(err)
			}
			_, err = tr.Relabel(ctx, snap, []string{"agent-smith:enqueued"}, "agent-smith:in-progress")
			if c.whole && !errors.Is(err, platforms.ErrPreconditionFailed) {
				t.Errorf("write over another writer's lifecycle label: err = %v, want ErrPreconditionFailed", err)
			}
			if !c.whole && err != nil {
				t.Errorf("Data Center write: %v (its answer has nothing to check)", err)
			}
		})
	}
}

// A Cloud tracker whose edit answers 204 all the same (a site that did
// not honour returnIssue) answers with the computed labels, not Whole.
func TestRelabelAnswerWithoutIssue(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s, url := newSim(t)
	s.SetJiraDeployment(trackersim.JiraDataCenter) // answers 204 whatever the query
	tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "NOA", Token: simToken, Email: "bot@example.com",
		Locker: redisLocker{rdb: rdb}})
	if err != nil {
		t.Fatal(err)
	}
	n := s.CreateIssue("NOA", "No answer", "", "agent-smith:pending")
	ref := platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("NOA", n)}
	snap, err := tr.Get(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Relabel(context.Background(), snap, []string{"agent-smith:pending"}, "agent-smith:enqueued")
	if err != nil {
		t.Fatal(err)
	}
	if got.Whole || !slices.Equal(got.Labels, []string{"agent-smith:enqueued"}) {
		t.Errorf("answer %+v: want the computed labels, not Whole", got)
	}
}

// A person's decision label added between a snapshot and the park write
// (the executor's review comment asks for it) is their input for the
// approval gate, not a race: the Cloud write goes through and keeps it. A
// stage label another writer added is a race.
func TestRelabelKeepsADecisionBeforeThePark(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	s, url := newSim(t)
	states := []string{"agent-smith:pending", "agent-smith:enqueued", "agent-smith:in-progress",
		"agent-smith:awaiting-approval", "agent-smith:done", "agent-smith:failed"}
	d, _ := platforms.Lookup(jira.Platform)
	built, _, _, err := d.New(platforms.TrackerOptions{BaseURL: url + "/jira/", Repo: "DEC", Token: simToken, Email: "bot@example.com",
		Deployment: jira.DeploymentCloud, Locker: redisLocker{rdb: rdb}, Logger: zap.NewNop(), LabelPrefix: "agent-smith", Lifecycle: states})
	if err != nil {
		t.Fatal(err)
	}
	tr := built.(*jira.Tracker)
	n := s.CreateIssue("DEC", "Park me", "the body", "agent-smith", "agent-smith:in-progress", "agent-smith:stage/plan")
	ref := platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("DEC", n)}
	park := func(person string) (*platforms.Ticket, error) {
		snap, err := tr.Get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EditLabel("DEC", n, person, true); err != nil {
			t.Fatal(err)
		}
		return tr.Relabel(ctx, snap, []string{"agent-smith:in-progress", "agent-smith:stage/plan"}, "agent-smith:awaiting-approval", "agent-smith:stage/build")
	}
	got, err := park("agent-smith:approved")
	if err != nil {
		t.Fatalf("park after a person's decision: %v", err)
	}
	if !got.Whole || !slices.Contains(got.Labels, "agent-smith:approved") || !slices.Contains(got.Labels, "agent-smith:awaiting-approval") {
		t.Errorf("answer %+v: want the parked issue with the person's decision", got)
	}

	if err := s.EditLabel("DEC", n, "agent-smith:approved", false); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Relabel(ctx, got, []string{"agent-smith:awaiting-approval", "agent-smith:stage/build"}, "agent-smith:in-progress", "agent-smith:stage/plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := park("agent-smith:stage/deploy"); !errors.Is(err, platforms.ErrPreconditionFailed) {
		t.Errorf("park after another writer's stage label: err = %v, want ErrPreconditionFailed", err)
	}
}

// An edit answer larger than the tracker holds is discarded: the write
// goes through and answers the computed labels, not Whole. On a real site
// a long thread of comments makes the answer large (each comment up to
// 32,767 characters); the sim's issue carries no comment field, so a
// description over 1 MiB stands in for it.
func TestRelabelAnswerOverTheBound(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	s, url := newSim(t)
	tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "BIG", Token: simToken, Email: "bot@example.com",
		Deployment: jira.DeploymentCloud, Locker: redisLocker{rdb: rdb}})
	if err != nil {
		t.Fatal(err)
	}
	n := s.CreateIssue("BIG", "Long", strings.Repeat("a long log line\n", 80000), "agent-smith", "agent-smith:pending")
	ref := platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("BIG", n)}
	snap, err := tr.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Relabel(ctx, snap, []string{"agent-smith:pending"}, "agent-smith:enqueued")
	if err != nil {
		t.Fatal(err)
	}
	if got.Whole || !slices.Equal(got.Labels, []string{"agent-smith", "agent-smith:enqueued"}) {
		t.Errorf("answer Whole=%v labels %q: want the computed labels, not Whole", got.Whole, got.Labels)
	}
	is, err := tr.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(is.Labels, []string{"agent-smith", "agent-smith:enqueued"}) {
		t.Errorf("labels after the write %q: want it applied", is.Labels)
	}
}
