package trackersim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// Blocker links: "issue number is blocked by issue blocker", both in one
// repository. Each dialect shows them the way its platform does (GitHub
// issue dependencies, GitLab "is_blocked_by" issue links, Azure DevOps
// predecessor relations, Jira "is blocked by" issue links). Adding a link
// changes neither issue's version and fires no webhook, as on the
// platforms, whose dependency changes do not come as issue events.

// AddBlocker records that issue number of repo is blocked by issue blocker
// of the same repository.
func (s *Sim) AddBlocker(repo string, number, blocker int) error {
	return s.store.addBlocker(repo, number, blocker)
}

func (st *store) addBlocker(repoName string, number, blocker int) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if number == blocker {
		return fmt.Errorf("block %s#%d by itself: %w", repoName, number, errInvalid)
	}
	_, is, err := st.lookup(repoName, number)
	if err != nil {
		return err
	}
	if _, _, err := st.lookup(repoName, blocker); err != nil {
		return err
	}
	if !slices.Contains(is.blockedBy, blocker) {
		is.blockedBy = append(is.blockedBy, blocker)
	}
	return nil
}

// blockers returns snapshots of the issues blocking number, open or closed,
// in the order the links were made.
func (st *store) blockers(repoName string, number int) ([]snapshot, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, is, err := st.lookup(repoName, number)
	if err != nil {
		return nil, err
	}
	out := make([]snapshot, 0, len(is.blockedBy))
	for _, b := range is.blockedBy {
		if bi, ok := r.issues[b]; ok {
			out = append(out, st.snap(r, bi))
		}
	}
	return out, nil
}

// ghBlockedBy serves "List dependencies an issue is blocked by"
// (https://docs.github.com/en/rest/issues/issue-dependencies): the blocking
// issues, open and closed, as issue objects. One page holds them all here.
func (s *Sim) ghBlockedBy(w http.ResponseWriter, r *http.Request, c *ghCall) {
	if s.noGHDeps {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	bs, err := s.store.blockers(c.repo, n)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	out := make([]ghIssue, 0, len(bs))
	for _, b := range bs {
		out = append(out, s.ghIssue(c.base, b))
	}
	s.writeCollection(w, r, out)
}

// glIssueLink is one entry of GitLab's "List issue relations": the linked
// issue with the link's id and type.
type glIssueLink struct {
	glIssue
	IssueLinkID int64  `json:"issue_link_id"`
	LinkType    string `json:"link_type"`
}

// glLinks serves "List issue relations"
// (https://docs.gitlab.com/api/issue_links/#list-issue-relations): the issues
// blocking this one with link_type "is_blocked_by" (from the blocked
// issue's side).
func (s *Sim) glLinks(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	bs, err := s.store.blockers(c.repo, n)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	out := make([]glIssueLink, 0, len(bs))
	for _, b := range bs {
		out = append(out, glIssueLink{glIssue: glIssueJSON(c.base, b), IssueLinkID: b.id, LinkType: "is_blocked_by"})
	}
	writeJSON(w, http.StatusOK, out)
}

// adoRelation is a work item link as "Work Items - Get Work Item" with
// $expand=relations returns it
// (https://learn.microsoft.com/rest/api/azure/devops/wit/work-items/get-work-item#workitemrelation).
type adoRelation struct {
	Rel        string         `json:"rel"`
	URL        string         `json:"url"`
	Attributes map[string]any `json:"attributes"`
}

// adoPredecessorRel is the link type of "this item has a predecessor":
// the reverse end of System.LinkTypes.Dependency.
const adoPredecessorRel = "System.LinkTypes.Dependency-Reverse"

// adoRelations lists a work item's predecessors (its blockers).
func (s *Sim) adoRelations(orgBase, repo string, number int) []adoRelation {
	bs, _ := s.store.blockers(repo, number)
	out := make([]adoRelation, 0, len(bs))
	for _, b := range bs {
		out = append(out, adoRelation{Rel: adoPredecessorRel, URL: adoWorkItemURL(orgBase, b.number),
			Attributes: map[string]any{"isLocked": false, "name": "Predecessor"}})
	}
	return out
}

// jiraIssueLinks renders number's blockers as Jira issue links of the
// built-in "Blocks" type, seen from the blocked issue: the blocker is the
// inwardIssue, read "is blocked by"
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-links/).
func (s *Sim) jiraIssueLinks(base, v, repo string, number int) []map[string]any {
	bs, _ := s.store.blockers(repo, number)
	out := make([]map[string]any, 0, len(bs))
	for _, b := range bs {
		id := strconv.FormatInt(b.id, 10)
		out = append(out, map[string]any{
			"id":   strconv.FormatInt(b.id*1000+int64(number), 10),
			"type": map[string]any{"id": "10000", "name": "Blocks", "inward": "is blocked by", "outward": "blocks"},
			"inwardIssue": map[string]any{"id": id, "key": jiraKey(b), "self": base + "/jira/rest/api/" + v + "/issue/" + id,
				"fields": map[string]any{"summary": b.title, "status": jiraStatusOf(b.open)}},
		})
	}
	return out
}
