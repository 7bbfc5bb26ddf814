package trackersim

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// JSON shapes of the Azure DevOps dialect, and the location discovery the
// SDK performs before its first call.

// adoTime is the timestamp format of Azure DevOps JSON.
func adoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// adoHref is one entry of a _links object.
type adoHref struct {
	Href string `json:"href"`
}

// adoIdentity is an IdentityRef as work item fields and comments carry it.
type adoIdentity struct {
	DisplayName string `json:"displayName"`
	ID          string `json:"id"`
	UniqueName  string `json:"uniqueName"`
	Descriptor  string `json:"descriptor"`
}

// adoUniqueSuffix makes a login a unique name (an e-mail address).
const adoUniqueSuffix = "@sim.invalid"

func adoIdentityOf(login string) adoIdentity {
	return adoIdentity{DisplayName: login, ID: glUUID("ado-identity|" + login), UniqueName: login + adoUniqueSuffix,
		Descriptor: "aad." + strconv.FormatInt(userID(login), 10)}
}

// adoWorkItem is a WorkItem resource.
type adoWorkItem struct {
	ID     int                `json:"id"`
	Rev    int                `json:"rev"`
	Fields map[string]any     `json:"fields"`
	Links  map[string]adoHref `json:"_links,omitempty"`
	URL    string             `json:"url"`
	// Relations are set with $expand=relations or all.
	Relations []adoRelation `json:"relations,omitempty"`
}

// adoState is the Basic process state of an issue.
func adoState(sn snapshot) string {
	if sn.open {
		return adoStateOpen
	}
	return adoStateClosed
}

// adoProject is the project part of a store key.
func adoProject(repo string) string {
	_, p, _ := strings.Cut(repo, "/")
	return p
}

// adoFields is every field of an issue as a work item; empty fields are
// absent, as Azure DevOps omits them.
func adoFields(sn snapshot) map[string]any {
	project := adoProject(sn.repo)
	f := map[string]any{
		"System.Id":            sn.number,
		"System.AreaPath":      project,
		"System.TeamProject":   project,
		"System.IterationPath": project,
		"System.WorkItemType":  "Issue",
		"System.State":         adoState(sn),
		"System.Reason":        "Added to backlog",
		"System.CreatedDate":   adoTime(sn.createdAt),
		"System.CreatedBy":     adoIdentityOf(sn.author),
		"System.ChangedDate":   adoTime(sn.updatedAt),
		"System.ChangedBy":     adoIdentityOf(orStr(sn.changedBy, sn.author)),
		// Who authenticated the last change: the service sets it, no
		// request can (ado.go, adoBypassRules).
		"System.AuthorizedAs": adoIdentityOf(orStr(sn.authorizedAs, sn.author)),
		"System.CommentCount": len(sn.comments),
		"System.Title":        sn.title,
		"System.Rev":          sn.rev,
	}
	if !sn.open {
		f["System.Reason"] = "Work finished"
	}
	if sn.body != "" {
		f["System.Description"] = sn.body
	}
	if len(sn.labels) > 0 {
		f["System.Tags"] = strings.Join(sn.labelNames(), "; ")
	}
	return f
}

// orStr is s, or def when s is empty.
func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// adoWorkItemURL is the REST URL of a work item (organization-scoped, as
// Azure DevOps returns it). orgBase is "<scheme>://<host>/ado/<org>".
func adoWorkItemURL(orgBase string, id int) string {
	return orgBase + "/_apis/wit/workItems/" + strconv.Itoa(id)
}

// adoEditURL is the web page of a work item.
func adoEditURL(orgBase, repo string, id int) string {
	return orgBase + "/" + url.PathEscape(adoProject(repo)) + "/_workitems/edit/" + strconv.Itoa(id)
}

// adoWorkItemJSON renders an issue as a work item. fields, when non-nil,
// selects the fields returned; links adds _links.
func adoWorkItemJSON(orgBase string, sn snapshot, fields []string, links bool) adoWorkItem {
	all := adoFields(sn)
	f := all
	if fields != nil {
		f = map[string]any{}
		for _, name := range fields {
			for k, v := range all {
				if strings.EqualFold(k, strings.TrimSpace(name)) {
					f[k] = v
				}
			}
		}
	}
	self := adoWorkItemURL(orgBase, sn.number)
	wi := adoWorkItem{ID: sn.number, Rev: sn.rev, Fields: f, URL: self}
	if links {
		wi.Links = map[string]adoHref{
			"self":              {self},
			"workItemUpdates":   {self + "/updates"},
			"workItemRevisions": {self + "/revisions"},
			"workItemComments":  {self + "/comments"},
			"html":              {adoEditURL(orgBase, sn.repo, sn.number)},
			"workItemType":      {orgBase + "/_apis/wit/workItemTypes/Issue"},
			"fields":            {orgBase + "/_apis/wit/fields"},
		}
	}
	return wi
}

// adoCommentJSON is a Comment resource.
func adoCommentJSON(orgBase string, sn snapshot, commentID int64, format string) map[string]any {
	var c comment
	for _, cm := range sn.comments {
		if cm.id == commentID {
			c = cm
		}
	}
	who := adoIdentityOf(c.author)
	return map[string]any{
		"workItemId":   sn.number,
		"id":           commentID,
		"version":      1,
		"text":         c.body,
		"renderedText": c.body,
		"format":       format,
		"createdBy":    who,
		"createdDate":  adoTime(c.at),
		"modifiedBy":   who,
		"modifiedDate": adoTime(c.updated()),
		"url":          adoWorkItemURL(orgBase, sn.number) + "/comments/" + strconv.FormatInt(commentID, 10),
	}
}

// adoLocation is an ApiResourceLocation: what OPTIONS {org}/_apis returns
// for each resource, and what the SDK builds URLs and negotiates API
// versions from.
type adoLocation struct {
	ID              string `json:"id"`
	Area            string `json:"area"`
	ResourceName    string `json:"resourceName"`
	RouteTemplate   string `json:"routeTemplate"`
	ResourceVersion int    `json:"resourceVersion"`
	MinVersion      string `json:"minVersion"`
	MaxVersion      string `json:"maxVersion"`
	ReleasedVersion string `json:"releasedVersion"`
}

// adoLocations are the resources the sim serves, with the location ids the
// SDK looks them up by and the route templates of Azure DevOps Services.
var adoLocations = []adoLocation{
	{ID: "e81700f7-3be2-46de-8624-2eb35882fcaa", Area: "Location", ResourceName: "ResourceAreas",
		RouteTemplate: "_apis/{resource}/{areaId}", ResourceVersion: 1, MinVersion: "3.2", MaxVersion: "7.2", ReleasedVersion: "0.0"},
	{ID: "72c7ddf8-2cdc-4f60-90cd-ab71c14a399b", Area: "wit", ResourceName: "workItems",
		RouteTemplate: "{project}/_apis/{area}/{resource}/{id}", ResourceVersion: 3, MinVersion: "1.0", MaxVersion: "7.2", ReleasedVersion: "7.1"},
	{ID: "908509b6-4248-4475-a1cd-829139ba419f", Area: "wit", ResourceName: "workItemsBatch",
		RouteTemplate: "{project}/_apis/{area}/{resource}", ResourceVersion: 1, MinVersion: "4.1", MaxVersion: "7.2", ReleasedVersion: "7.1"},
	{ID: "1a9c53f7-f243-4447-b110-35ef023636e4", Area: "wit", ResourceName: "wiql",
		RouteTemplate: "{project}/{team}/_apis/{area}/{resource}/{id}", ResourceVersion: 2, MinVersion: "1.0", MaxVersion: "7.2", ReleasedVersion: "7.1"},
	{ID: "6570bf97-d02c-4a91-8d93-3abe9895b1a9", Area: "wit", ResourceName: "updates",
		RouteTemplate: "{project}/_apis/{area}/workItems/{id}/{resource}/{updateNumber}", ResourceVersion: 3, MinVersion: "1.0", MaxVersion: "7.2", ReleasedVersion: "7.1"},
	{ID: "608aac0a-32e1-4493-a863-b9cf4566d257", Area: "wit", ResourceName: "comments",
		RouteTemplate: "{project}/_apis/{area}/workItems/{workItemId}/{resource}/{commentId}", ResourceVersion: 4, MinVersion: "5.0", MaxVersion: "7.2", ReleasedVersion: "0.0"},
	{ID: "bc15bc60-e7a8-43cb-ab01-2106be3983a1", Area: "wit", ResourceName: "tags",
		RouteTemplate: "{project}/_apis/{area}/{resource}/{tagIdOrName}", ResourceVersion: 1, MinVersion: "5.0", MaxVersion: "7.2", ReleasedVersion: "0.0"},
	{ID: adoTestNotificationsLocation, Area: "hooks", ResourceName: "testNotifications",
		RouteTemplate: "_apis/{area}/{resource}", ResourceVersion: 1, MinVersion: "1.0", MaxVersion: "7.2", ReleasedVersion: "0.0"},
}

// adoWitAreaID is the work item tracking resource area
// (workitemtracking.ResourceAreaId).
const adoWitAreaID = "5264459e-e5e0-4bd8-b118-0985e68a4ec5"

// adoOptions answers OPTIONS {org}/_apis with every resource location.
func (s *Sim) adoOptions(w http.ResponseWriter, _ *http.Request, _ *adoCall) {
	writeJSON(w, http.StatusOK, map[string]any{"count": len(adoLocations), "value": adoLocations})
}

// adoResourceAreas is "Resource Areas - List" (or one area by id): the work
// item tracking area lives at the organization's own URL, as on Azure
// DevOps Services.
func (s *Sim) adoResourceAreas(w http.ResponseWriter, r *http.Request, c *adoCall) {
	areas := []map[string]string{
		{"id": adoWitAreaID, "name": "wit", "locationUrl": c.base + "/"},
		{"id": "6823169a-2419-4015-b2fd-6fd6f026ca00", "name": "Location", "locationUrl": c.base + "/"},
	}
	if id := r.PathValue("areaId"); id != "" {
		for _, a := range areas {
			if strings.EqualFold(a["id"], id) {
				writeJSON(w, http.StatusOK, a)
				return
			}
		}
		adoError(w, http.StatusNotFound, "ResourceAreaNotFoundException", "Resource area "+id+" was not found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(areas), "value": areas})
}
