package azuredevops_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ado "github.com/microsoft/azure-devops-go-api/azuredevops/v7"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/webapi"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// The live contract test's settings (docs/testing.md, "Live contract tests").
const (
	liveOrgURL   = "AGENTSMITH_LIVE_AZUREDEVOPS_ORG_URL"
	liveProject  = "AGENTSMITH_LIVE_AZUREDEVOPS_PROJECT"
	liveToken    = "AGENTSMITH_LIVE_AZUREDEVOPS_PAT"
	liveWorkType = "AGENTSMITH_LIVE_AZUREDEVOPS_WORK_ITEM_TYPE"
)

// TestLive runs the live contract against a real Azure DevOps project;
// skipped unless the variables are set.
func TestLive(t *testing.T) {
	env := trackertest.LiveEnv(t, "./platforms/azuredevops", "Live",
		trackertest.LiveVar{Name: liveOrgURL, Example: "https://dev.azure.com/your-org"},
		trackertest.LiveVar{Name: liveProject, Example: "YourProject"},
		trackertest.LiveVar{Name: liveToken, Example: "…"},
		trackertest.LiveVar{Name: liveWorkType, Example: "Task", Optional: true})
	trackertest.RunLive(t, liveHarness(t, env))
}

// TestSimContract runs the live contract, through the same binding as
// TestLive, against trackersim's Azure DevOps dialect. The dialect serves
// no "Create work item" (POST …/workitems/${type}) and no comment list
// today, so those two go through the sim's Go API; every label write and
// read, the human's included, and the close go over REST as in a live run.
func TestSimContract(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	const org, project = "Live", "Contract"
	h := liveHarness(t, map[string]string{liveOrgURL: srv.URL + "/ado/" + org, liveProject: project, liveToken: simToken})
	number := func(ref platforms.Ref) int {
		_, n, err := azuredevops.ParseID(ref.ID)
		if err != nil {
			t.Error(err)
		}
		return n
	}
	h.Create = func(_ context.Context, title string, labels ...string) (platforms.Ref, error) {
		n := s.CreateIssue(org+"/"+project, title, "", labels...)
		return platforms.Ref{Platform: azuredevops.Platform, Project: "live", ID: azuredevops.FormatID(azuredevops.Locator(org, project), n)}, nil
	}
	h.Comments = func(_ context.Context, ref platforms.Ref) ([]string, error) {
		is, _ := s.Issue(org+"/"+project, number(ref))
		var out []string
		for _, c := range is.Comments {
			out = append(out, c.Body)
		}
		return out, nil
	}
	trackertest.RunLiveOnSim(t, s, h)
}

// closeStates are tried in turn to close a scratch work item: "Removed"
// (Agile, Scrum), then "Closed" (Agile, CMMI), then "Done" (Basic, Scrum).
// Azure DevOps refuses a state its process lacks with 400 and nothing
// written.
var closeStates = []string{"Removed", "Closed", "Done"}

// liveHarness binds the live contract to the project env names: the tracker
// under test, and azure-devops-go-api with the same PAT as the human.
func liveHarness(t *testing.T, env map[string]string) trackertest.LiveHarness {
	orgURL := strings.TrimRight(env[liveOrgURL], "/")
	cut := strings.LastIndex(orgURL, "/")
	if cut < 0 {
		t.Fatalf("%s=%q: want the organization's URL, such as https://dev.azure.com/your-org", liveOrgURL, orgURL)
	}
	base, org, project := orgURL[:cut+1], orgURL[cut+1:], env[liveProject]
	workType := env[liveWorkType]
	if workType == "" {
		workType = "Task" // in all four default processes
	}
	tr, err := azuredevops.New(azuredevops.Options{BaseURL: base, Repo: org + "/" + project, Project: "live", Token: env[liveToken]})
	if err != nil {
		t.Fatal(err)
	}
	conn := ado.NewPatConnection(orgURL, env[liveToken])
	conn.Timeout = ptr(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	human, err := workitemtracking.NewClient(ctx, conn)
	if err != nil {
		t.Fatalf("work item client for %s: %v", orgURL, err)
	}
	id := func(ref platforms.Ref) (int, error) {
		_, n, err := azuredevops.ParseID(ref.ID)
		return n, err
	}
	patch := func(ctx context.Context, n int, ops ...webapi.JsonPatchOperation) (*workitemtracking.WorkItem, error) {
		return human.UpdateWorkItem(ctx, workitemtracking.UpdateWorkItemArgs{Id: &n, Project: &project, Document: &ops})
	}
	read := func(ctx context.Context, ref platforms.Ref) (n, rev int, tags []string, err error) {
		if n, err = id(ref); err != nil {
			return 0, 0, nil, err
		}
		wi, err := human.GetWorkItem(ctx, workitemtracking.GetWorkItemArgs{Id: &n, Project: &project})
		if err != nil {
			return 0, 0, nil, err
		}
		if wi.Rev != nil {
			rev = *wi.Rev
		}
		if wi.Fields != nil {
			s, _ := (*wi.Fields)["System.Tags"].(string)
			for _, tag := range strings.Split(s, ";") {
				if tag = strings.TrimSpace(tag); tag != "" {
					tags = append(tags, tag)
				}
			}
		}
		return n, rev, tags, nil
	}
	// editTags is the human's tag edit: the whole list with "replace",
	// conditional on the revision read (re-read on 412), so the edit is
	// exactly the one tag whatever "add" does to System.Tags (Azure
	// DevOps merges it).
	editTags := func(ctx context.Context, ref platforms.Ref, change func([]string) []string) error {
		for attempt := 1; ; attempt++ {
			n, rev, tags, err := read(ctx, ref)
			if err != nil {
				return err
			}
			_, err = patch(ctx, n,
				op(webapi.OperationValues.Test, "/rev", rev),
				op(webapi.OperationValues.Replace, "/fields/System.Tags", strings.Join(change(tags), "; ")))
			if err == nil || statusOf(err) != 412 || attempt == 5 {
				return err
			}
		}
	}
	return trackertest.LiveHarness{
		Platform: azuredevops.Platform,
		Tracker:  tr,
		Create: func(ctx context.Context, title string, labels ...string) (platforms.Ref, error) {
			doc := []webapi.JsonPatchOperation{
				op(webapi.OperationValues.Add, "/fields/System.Title", title),
				op(webapi.OperationValues.Add, "/fields/System.Description",
					"A scratch work item of agentsmithd's live contract test (go test ./platforms/azuredevops -run Live); it closes it when done."),
				op(webapi.OperationValues.Add, "/fields/System.Tags", strings.Join(labels, "; ")),
			}
			wi, err := human.CreateWorkItem(ctx, workitemtracking.CreateWorkItemArgs{Document: &doc, Project: &project, Type: &workType})
			if err != nil {
				return platforms.Ref{}, err
			}
			if wi.Id == nil {
				return platforms.Ref{}, errors.New("created work item has no id")
			}
			return platforms.Ref{Platform: azuredevops.Platform, Project: "live", ID: azuredevops.FormatID(azuredevops.Locator(org, project), *wi.Id)}, nil
		},
		Close: func(ctx context.Context, ref platforms.Ref) error {
			n, err := id(ref)
			if err != nil {
				return err
			}
			var errs []error
			for _, state := range closeStates {
				_, err := patch(ctx, n, op(webapi.OperationValues.Replace, "/fields/System.State", state))
				if err == nil {
					return nil
				}
				errs = append(errs, fmt.Errorf("state %s: %w", state, err))
			}
			return errors.Join(errs...)
		},
		AddLabel: func(ctx context.Context, ref platforms.Ref, label string) error {
			return editTags(ctx, ref, func(tags []string) []string { return append(tags, label) })
		},
		RemoveLabel: func(ctx context.Context, ref platforms.Ref, label string) error {
			return editTags(ctx, ref, func(tags []string) []string {
				var out []string
				for _, tag := range tags {
					if !strings.EqualFold(tag, label) {
						out = append(out, tag)
					}
				}
				return out
			})
		},
		Labels: func(ctx context.Context, ref platforms.Ref) ([]string, error) {
			_, _, tags, err := read(ctx, ref)
			return tags, err
		},
		Comments: func(ctx context.Context, ref platforms.Ref) ([]string, error) {
			n, err := id(ref)
			if err != nil {
				return nil, err
			}
			list, err := human.GetComments(ctx, workitemtracking.GetCommentsArgs{Project: &project, WorkItemId: &n})
			if err != nil || list.Comments == nil {
				return nil, err
			}
			var out []string
			for _, c := range *list.Comments {
				if c.Text != nil {
					out = append(out, *c.Text)
				}
			}
			return out, nil
		},
	}
}

func op(o webapi.Operation, path string, value any) webapi.JsonPatchOperation {
	return webapi.JsonPatchOperation{Op: &o, Path: &path, Value: value}
}

// statusOf is the HTTP status of an SDK error, 0 if it carries none.
func statusOf(err error) int {
	var v ado.WrappedError
	if errors.As(err, &v) && v.StatusCode != nil {
		return *v.StatusCode
	}
	var p *ado.WrappedError
	if errors.As(err, &p) && p != nil && p.StatusCode != nil {
		return *p.StatusCode
	}
	return 0
}

func ptr[T any](v T) *T { return &v }
