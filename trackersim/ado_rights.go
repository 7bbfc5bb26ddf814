package trackersim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// What Azure DevOps refuses a work item update for that is not the patch
// itself: a tag the project does not define yet, written by an identity
// that may not create tags, and a rule another field breaks.
//
// Tag definitions. A project keeps a catalogue of tag definitions; a tag a
// work item update names that the catalogue lacks is created by the update,
// and creating one is a right of its own: "To add new tags to work items:
// At least Basic access" and "Project-level Create tag definition
// permission set to Allow"; "In private projects, Stakeholders can only
// add existing tags" (MicrosoftDocs/azure-devops-docs,
// docs/boards/includes/prerequisites-work-items.md; renovatebot/renovate#25071
// documents the same for pull request tags). The refusal is 403 with an
// AccessCheckException whose RequestedPermissions is 2, the Create bit of
// the Tagging security namespace (a Bug created with a new tag,
// hkarthik7/azure-devops-java-sdk#105, body quoted in adoTagCreateRefused;
// dependabot/dependabot-core#4352 keys its TagsCreationForbidden on the 403
// and "TF401289"). The sim's catalogue is the project's repository labels
// (store.labelFor): every tag that was ever on one of its work items, plus
// DefineTags. Azure DevOps deletes a tag no work item has carried for three
// days (docs/boards/queries/add-tags-to-work-items.md, "The system
// automatically deletes unassigned tags after 3 days of disuse";
// MicrosoftDocs/azure-devops-docs#9784 reports it late); the sim keeps
// every definition.
//
// Rules. Every save validates the whole work item, so a work item that
// breaks a rule on any field refuses every update, a tags-only one too
// (bluebasher/WorkItemUpdater#48: a state update refused for a rule on
// State). The refusal is 400 RuleValidationException TF401320 naming the
// field, with the rule errors in customProperties (the bodies quoted in
// snuziale/vsts-extension-split-work#25 and
// figueiredorui/1-click-child-links#135; adoRuleRefused). Which of the two
// checks the service makes first is not on record; the sim checks tags
// first. Whether Comments - Add validates the work item is not on record
// either: comments are their own resource, and the sim lets them through.

// adoTaggingNamespace is the Tagging security namespace; its token for a
// project is "/{projectId}" and its bits are Enumerate 1, Create 2, Update
// 4, Delete 8 (MicrosoftDocs/azure-devops-docs,
// docs/organizations/security/namespace-reference.md).
const adoTaggingNamespace = "bb50f182-8e5e-40b8-bc21-e8752a1e7ae2"

// Tagging permission bits.
const (
	adoTagEnumerate = 1
	adoTagCreate    = 2
)

// DefineTags adds tags to the tag catalogue of an Azure DevOps project
// ("org/project"), as a person with Basic access does by putting them on a
// work item once.
func (s *Sim) DefineTags(repo string, tags ...string) error {
	for _, t := range tags {
		if _, _, err := s.store.createLabel(repo, t, "", "", true); err != nil {
			return err
		}
	}
	return nil
}

// adoUndefinedTags are the tags of next that neither cur has nor the
// project's catalogue defines, compared case-insensitively.
func (s *Sim) adoUndefinedTags(repo string, cur, next []string) ([]string, error) {
	defined, err := s.store.repoLabels(repo)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range next {
		known := false
		for _, c := range cur {
			known = known || strings.EqualFold(c, n)
		}
		for _, d := range defined {
			known = known || strings.EqualFold(d.name, n)
		}
		if !known {
			out = append(out, n)
		}
	}
	return out, nil
}

// adoTagCreateRefused answers an update that would create a tag the
// identity may not create: hkarthik7/azure-devops-java-sdk#105 quotes the
// service's body, {"$id":"1","customProperties":{"RequestedPermissions":2},
// "innerException":null,"message":"TF401289: The current user does not
// have permissions to create tags.","typeName":
// "Microsoft.VisualStudio.Services.Security.AccessCheckException,
// Microsoft.VisualStudio.Services.WebApi","typeKey":"AccessCheckException",
// "errorCode":0,"eventId":3000}, with status 403 (the same issue, and
// dependabot-core#4352's "403 forbidden"). Nothing of the update is
// applied.
func adoTagCreateRefused(w http.ResponseWriter) {
	writeJSON(w, http.StatusForbidden, adoErrorBody{ID: "1", EventID: 3000,
		CustomProperties: map[string]any{"RequestedPermissions": adoTagCreate},
		Message:          "TF401289: The current user does not have permissions to create tags.",
		TypeKey:          "AccessCheckException",
		TypeName:         "Microsoft.VisualStudio.Services.Security.AccessCheckException, Microsoft.VisualStudio.Services.WebApi",
	})
}

// BreakRequiredField makes the work item number of an Azure DevOps project
// break a rule on field (a reference name such as
// "Microsoft.VSTS.Common.Activity"): the field is required and empty, as
// after a rule was added to the work item type, so every update through
// the API is refused with TF401320 until the field is set (here: until
// BreakRequiredField is called with field ""). Changes through the Go API
// (a person's) and comments still go through.
func (s *Sim) BreakRequiredField(repo string, number int, field string) {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.brokenRules == nil {
		st.brokenRules = map[string]string{}
	}
	key := fmt.Sprintf("%s#%d", repo, number)
	if field == "" {
		delete(st.brokenRules, key)
		return
	}
	st.brokenRules[key] = field
}

// brokenRule is the field whose rule the work item breaks, "" if none.
func (st *store) brokenRule(repo string, number int) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.brokenRules[fmt.Sprintf("%s#%d", repo, number)]
}

// adoRuleRefused answers an update of a work item that breaks a rule on
// field: 400 RuleValidationException, TF401320 naming the field by its
// name (the last part of the reference name, as "ABLScrum.Injected" is
// "Injected" in snuziale/vsts-extension-split-work#25), and the rule
// errors in customProperties. The flags are those of a required field left
// empty ("required, invalidEmpty", fieldStatusCode 524289 in the same
// body), eventId 3200.
func adoRuleRefused(w http.ResponseWriter, field string) {
	name := field[strings.LastIndexByte(field, '.')+1:]
	msg := "TF401320: Rule Error for field " + name + ". Error code: Required, InvalidEmpty."
	writeJSON(w, http.StatusBadRequest, adoErrorBody{ID: "1", EventID: 3200, Message: msg,
		CustomProperties: map[string]any{
			"FieldReferenceName": nil, "FieldStatusFlags": "none", "ErrorMessage": msg, "FieldStatusCode": 0,
			"RuleValidationErrors": []map[string]any{{"fieldReferenceName": field, "fieldStatusFlags": "required, invalidEmpty",
				"errorMessage": msg, "fieldStatusCode": 524289, "ruleValidationErrors": nil}},
		},
		TypeKey:  "RuleValidationException",
		TypeName: "Microsoft.TeamFoundation.WorkItemTracking.Server.RuleValidationException, Microsoft.TeamFoundation.WorkItemTracking.Server",
	})
}

// adoListTags is "Tags - List" (GET {org}/{project}/_apis/wit/tags,
// 7.1-preview.1; https://learn.microsoft.com/rest/api/azure/devops/wit/tags/list):
// the project's tag definitions, {count, value} of {id, name, url}.
func (s *Sim) adoListTags(w http.ResponseWriter, _ *http.Request, c *adoCall) {
	defined, err := s.store.repoLabels(c.repo)
	if err != nil {
		s.adoStoreError(w, 0, err)
		return
	}
	sort.Slice(defined, func(i, j int) bool { return strings.ToLower(defined[i].name) < strings.ToLower(defined[j].name) })
	out := make([]map[string]any, 0, len(defined))
	for _, d := range defined {
		id := glUUID("ado-tag|" + c.repo + "|" + strings.ToLower(d.name))
		out = append(out, map[string]any{"id": id, "name": d.name,
			"url": c.base + "/" + adoProject(c.repo) + "/_apis/wit/tags/" + id})
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// adoHasPermissions is "Permissions - Has Permissions" (GET
// {org}/_apis/permissions/{securityNamespaceId}/{permissions}?tokens=...,
// what the SDK's security.HasPermissions calls: "Evaluates whether the
// caller has the specified permissions on the specified set of security
// tokens"): one boolean per token, {count, value}. The sim models the
// Tagging namespace only: Enumerate is every identity's, Create is refused
// to an identity whose Access says CannotCreateTags, Update and Delete are
// project administrators'. Whether the service's evaluation reflects a
// Stakeholder access level, or only the Create tag definition ACL, is not
// on record; the sim answers as if it reflects both. Another namespace is
// 404, as for one the service does not know.
func (s *Sim) adoHasPermissions(w http.ResponseWriter, r *http.Request, _ *adoCall) {
	if !strings.EqualFold(r.PathValue("namespace"), adoTaggingNamespace) {
		adoError(w, http.StatusNotFound, "SecurityNamespaceNotFoundException",
			"sim: only the Tagging security namespace ("+adoTaggingNamespace+") is modelled")
		return
	}
	bits, err := strconv.Atoi(r.PathValue("permissions"))
	if err != nil || bits <= 0 {
		adoError(w, http.StatusBadRequest, "ArgumentException", fmt.Sprintf("The value '%s' is not valid for permissions.", r.PathValue("permissions")))
		return
	}
	a := s.requestAccess(r)
	granted := adoTagEnumerate | adoTagCreate
	if a.CannotCreateTags {
		granted &^= adoTagCreate
	}
	if atLeast(a.Role, RoleAdmin) {
		granted |= 4 | 8
	}
	q := r.URL.Query()
	delim := q.Get("delimiter")
	if delim == "" {
		delim = ","
	}
	tokens := strings.Split(q.Get("tokens"), delim)
	out := make([]bool, len(tokens))
	for i := range tokens {
		out[i] = bits&granted == bits
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}
