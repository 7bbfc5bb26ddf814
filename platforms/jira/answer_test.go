package jira_test

import (
	"context"
	"errors"
	"slices"
	"testing"

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
