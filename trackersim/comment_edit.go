package trackersim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Editing a comment, as a progress comment does (lifecycle/progress.go).
// Every platform keeps a comment apart from its issue: an edit changes the
// comment's body and its updated time, not the issue's version, so it never
// turns a label write's precondition stale. The real services also send an
// edit webhook (GitHub issue_comment "edited", GitLab Note Hook with action
// "update", Jira comment_updated); the daemon's decoders ignore all three
// (platforms/*/webhooks.go read new comments only), so the sim sends none.

// errCommentNotFound is an unknown comment id on an existing issue.
var errCommentNotFound = fmt.Errorf("comment: %w", ErrNotFound)

// editComment replaces the body of comment id. number 0 looks for the
// comment on every issue of the repository: GitHub's edit endpoint names
// the comment alone.
func (st *store) editComment(repoName string, number int, id int64, body string) (snapshot, comment, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return snapshot{}, comment{}, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	for n, is := range r.issues {
		if number != 0 && n != number {
			continue
		}
		for i := range is.comments {
			if is.comments[i].id == id {
				is.comments[i].body = body
				is.comments[i].edited = st.clock()
				return st.snap(r, is), is.comments[i], nil
			}
		}
	}
	if number != 0 {
		if _, ok := r.issues[number]; !ok {
			return snapshot{}, comment{}, fmt.Errorf("issue %s#%d: %w", repoName, number, ErrNotFound)
		}
	}
	return snapshot{}, comment{}, fmt.Errorf("%d: %w", id, errCommentNotFound)
}

// ghEditComment is "Update an issue comment": PATCH
// /repos/{owner}/{repo}/issues/comments/{comment_id} {"body"}, 200 with the
// comment (https://docs.github.com/rest/issues/comments#update-an-issue-comment).
func (s *Sim) ghEditComment(w http.ResponseWriter, r *http.Request, c *ghCall) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	body, ok := ghCommentBody(w, r, c)
	if !ok {
		return
	}
	sn, cm, err := s.store.editComment(c.repo, 0, id, body)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	writeJSON(w, http.StatusOK, s.ghComment(c.base, sn, cm))
}

// glEditNote is "Modify existing issue note": PUT
// /projects/:id/issues/:issue_iid/notes/:note_id with body, 200 with the
// note (https://docs.gitlab.com/api/notes/#modify-existing-issue-note).
func (s *Sim) glEditNote(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("note"), 10, 64)
	if err != nil || id <= 0 {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
		return
	}
	body, ok := glNoteBody(w, r)
	if !ok {
		return
	}
	// Notes::UpdateService runs an edit's quick actions too; an edit to
	// nothing but commands deletes the note there, which the sim leaves
	// as it was.
	if body, ok = s.glNoteWithQuickActions(w, c, n, body); !ok {
		return
	}
	sn, cm, err := s.store.editComment(c.repo, n, id, body)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, glNoteJSON(c.base, sn, cm))
}

// adoUpdateComment is "Comments - Update Work Item Comment"
// (7.1-preview.4): PATCH {project}/_apis/wit/workItems/{id}/comments/{commentId}
// with {"text"}; format is required by the SDK and taken like Add's
// (https://learn.microsoft.com/en-us/rest/api/azure/devops/wit/comments/update-work-item-comment).
func (s *Sim) adoUpdateComment(w http.ResponseWriter, r *http.Request, c *adoCall) {
	id, ok := adoWorkItemID(w, r)
	if !ok {
		return
	}
	commentID, err := strconv.ParseInt(r.PathValue("comment"), 10, 64)
	if err != nil || commentID <= 0 {
		adoError(w, http.StatusNotFound, "CommentNotFoundException", fmt.Sprintf("Comment %s does not exist.", r.PathValue("comment")))
		return
	}
	var req struct {
		Text *string `json:"text"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil || req.Text == nil || *req.Text == "" {
		adoError(w, http.StatusBadRequest, "VssPropertyValidationException", "The comment text must not be empty.")
		return
	}
	format := strings.ToLower(cmp.Or(r.URL.Query().Get("format"), "html"))
	if format != "markdown" && format != "html" {
		adoError(w, http.StatusBadRequest, "ArgumentException", fmt.Sprintf("The value '%s' is not valid for format.", format))
		return
	}
	sn, _, err := s.store.editComment(c.repo, id, commentID, *req.Text)
	if err != nil {
		if errors.Is(err, errCommentNotFound) {
			adoError(w, http.StatusNotFound, "CommentNotFoundException", fmt.Sprintf("Comment %d does not exist.", commentID))
			return
		}
		s.adoStoreError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, adoCommentJSON(c.base, sn, commentID, format))
}

// jiraEditComment is "Update comment": PUT
// /rest/api/{2|3}/issue/{issueIdOrKey}/comment/{id}, the body as for Add
// (ADF on v3, a string on v2), 200 with the comment
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/#api-rest-api-3-issue-issueidorkey-comment-id-put).
func (s *Sim) jiraEditComment(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	repo, n, ok := jiraIssueRef(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("comment"), 10, 64)
	if err != nil || id <= 0 {
		jiraError(w, http.StatusNotFound, "Can not find a comment for the id: "+r.PathValue("comment")+".")
		return
	}
	raw, text, ok := jiraCommentBody(w, r, c)
	if !ok {
		return
	}
	sn, cm, err := s.store.editComment(repo, n, id, text)
	if err != nil {
		s.jiraStoreError(w, err)
		return
	}
	ids := strconv.FormatInt(id, 10)
	writeJSON(w, http.StatusOK, jiraComment{
		Self: c.base + "/jira/rest/api/" + c.version + "/issue/" + strconv.FormatInt(sn.id, 10) + "/comment/" + ids,
		ID:   ids, Author: jiraUserOf(c.base, cm.author), Body: raw,
		Created: jiraTime(cm.at), Updated: jiraTime(cm.edited),
	})
}
