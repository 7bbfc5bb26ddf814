package azuredevops_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/webapi"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"

	lc "github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
	azdo "github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// TestBypassRulesForgedChangedBy is issue 41 #2: an integration identity
// allowed to "Bypass rules on work item updates" writes a decision tag, or
// a "/agent-smith approve" comment through System.History, with
// bypassRules=true and System.ChangedBy set to an approver's name. The
// service records the integration account in System.AuthorizedAs; the
// decision is credited to it, not to the forged name, and the approver
// check (the gate's: listed user or team member) refuses it. Everything
// goes through azure-devops-go-api against trackersim.
func TestBypassRulesForgedChangedBy(t *testing.T) {
	const (
		repo     = "Org/Bypass"
		intToken = "integration-pat"
		approver = "approver@sim.invalid"
		intName  = "integration@sim.invalid"
		secret   = "hook-secret"
	)
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken, intToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetAccess(intToken, trackersim.Access{Login: "integration"})
	s.SetUserRole("approver", trackersim.RoleWrite)
	s.SetTeamMembers("Approvers", "approver")

	got := make(chan []byte, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	t.Cleanup(recv.Close)
	s.CreateRepo(repo)
	s.AddHook(trackersim.Hook{Repo: repo, URL: recv.URL, Secret: secret, Dialect: "ado"})
	hooks := azdo.Webhooks{}
	next := func(t *testing.T, kind platforms.EventKind) platforms.WebhookEvent {
		t.Helper()
		for {
			select {
			case b := <-got:
				ev, err := hooks.Parse(nil, b)
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if ev.Kind == kind {
					return ev
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %v delivery", kind)
			}
		}
	}

	ctx := context.Background()
	tr, err := azdo.New(azdo.Options{BaseURL: srv.URL + "/ado/", Repo: repo, Project: "bypass", Token: simToken})
	if err != nil {
		t.Fatal(err)
	}
	integ, err := workitemtracking.NewClient(ctx, azuredevops.NewPatConnection(srv.URL+"/ado/Org", intToken))
	if err != nil {
		t.Fatal(err)
	}
	project := "Bypass"
	patch := func(t *testing.T, n int, bypass bool, ops ...webapi.JsonPatchOperation) {
		t.Helper()
		if _, err := integ.UpdateWorkItem(ctx, workitemtracking.UpdateWorkItemArgs{Id: &n, Project: &project, Document: &ops, BypassRules: &bypass}); err != nil {
			t.Fatalf("integration update: %v", err)
		}
	}
	add := webapi.OperationValues.Add
	forge := webapi.JsonPatchOperation{Op: &add, Path: ptr("/fields/System.ChangedBy"), Value: "Approver <" + approver + ">"}
	// mayApprove is the gate's approver check (claim.MayAct) in small: a
	// listed user, or a member of a listed team.
	allow := lc.TriggerAllow{Users: []string{approver}, Teams: []string{"Approvers"}}
	mayApprove := func(t *testing.T, actor string) bool {
		t.Helper()
		if allow.Listed(actor) {
			return true
		}
		in, err := tr.InTeam(ctx, actor, "Approvers")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	if !mayApprove(t, approver) || mayApprove(t, intName) {
		t.Fatalf("approver check: approver %v, integration %v", mayApprove(t, approver), mayApprove(t, intName))
	}

	n := s.CreateIssue(repo, "gated", "", "agent-smith:awaiting-approval")
	next(t, platforms.EventTicket)
	ref := platforms.Ref{Platform: azdo.Platform, Project: "bypass", ID: azdo.FormatID(tr.Locator(), n)}

	t.Run("decision tag", func(t *testing.T) {
		patch(t, n, true, forge, webapi.JsonPatchOperation{Op: &add, Path: ptr("/fields/System.Tags"), Value: "agent-smith:approved"})
		wi, err := integ.GetWorkItem(ctx, workitemtracking.GetWorkItemArgs{Id: &n, Project: &project})
		if err != nil {
			t.Fatal(err)
		}
		if f := *wi.Fields; identity(f["System.ChangedBy"]) != approver || identity(f["System.AuthorizedAs"]) != intName {
			t.Fatalf("work item ChangedBy %v AuthorizedAs %v: the sim did not record the forged update", f["System.ChangedBy"], f["System.AuthorizedAs"])
		}
		ev := next(t, platforms.EventTicket)
		if !ev.AddedLabel("agent-smith:approved") || ev.Actor != intName {
			t.Errorf("webhook: actor %q added %q, want %q (not the forged %q)", ev.Actor, ev.Added, intName, approver)
		}
		who, err := tr.LabelAddedBy(ctx, ref, "agent-smith:approved")
		if err != nil || who != intName {
			t.Errorf("LabelAddedBy = %q, %v; want %q (not the forged %q)", who, err, intName, approver)
		}
		if mayApprove(t, ev.Actor) || mayApprove(t, who) {
			t.Errorf("the integration account's decision was admitted as an approver's")
		}
	})

	t.Run("comment command", func(t *testing.T) {
		patch(t, n, true, forge, webapi.JsonPatchOperation{Op: &add, Path: ptr("/fields/System.History"), Value: "/agent-smith approve"})
		ev := next(t, platforms.EventComment)
		if ev.Comment != "/agent-smith approve" || ev.Actor != intName {
			t.Errorf("comment: actor %q comment %q, want %q (not the forged %q)", ev.Actor, ev.Comment, intName, approver)
		}
		if mayApprove(t, ev.Actor) {
			t.Errorf("the integration account's command was admitted as an approver's")
		}
		// The Comments API names the authenticated author in createdBy.
		text := "/agent-smith approve"
		cm, err := integ.AddWorkItemComment(ctx, workitemtracking.AddWorkItemCommentArgs{Request: &workitemtracking.CommentCreate{Text: &text}, Project: &project, WorkItemId: &n,
			Format: ptr(workitemtracking.CommentFormatValues.Markdown)})
		if err != nil || cm.CreatedBy == nil || cm.CreatedBy.UniqueName == nil || *cm.CreatedBy.UniqueName != intName {
			t.Fatalf("AddWorkItemComment: %+v, %v", cm, err)
		}
		if ev := next(t, platforms.EventComment); ev.Actor != intName {
			t.Errorf("Comments API comment: actor %q, want %q", ev.Actor, intName)
		}
	})

	t.Run("without bypassRules", func(t *testing.T) {
		// The service disregards a ChangedBy written without bypassRules.
		patch(t, n, false, forge, webapi.JsonPatchOperation{Op: &add, Path: ptr("/fields/System.Tags"), Value: "agent-smith:rejected"})
		wi, err := integ.GetWorkItem(ctx, workitemtracking.GetWorkItemArgs{Id: &n, Project: &project})
		if err != nil {
			t.Fatal(err)
		}
		if got := identity((*wi.Fields)["System.ChangedBy"]); got != intName {
			t.Errorf("ChangedBy without bypassRules = %q, want %q", got, intName)
		}
		if ev := next(t, platforms.EventTicket); ev.Actor != intName {
			t.Errorf("webhook actor %q, want %q", ev.Actor, intName)
		}
	})

	t.Run("a real approver", func(t *testing.T) {
		if err := s.As("approver").AddLabels(repo, n, "agent-smith:approved-again"); err != nil {
			t.Fatal(err)
		}
		ev := next(t, platforms.EventTicket)
		who, err := tr.LabelAddedBy(ctx, ref, "agent-smith:approved-again")
		if ev.Actor != approver || err != nil || who != approver || !mayApprove(t, who) {
			t.Errorf("approver's own tag: webhook %q, history %q, %v", ev.Actor, who, err)
		}
	})
}

// identity is the unique name of an identity field as the SDK decodes it.
func identity(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["uniqueName"].(string)
		return s
	}
	return ""
}
