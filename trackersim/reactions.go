package trackersim

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Reactions on issues: GitHub's Reactions API and GitLab's award emoji. A
// user has at most one reaction of each kind per issue on both platforms.
// Reacting changes no label, fires no issues webhook and, in the sim,
// leaves the issue's version (ETag) alone: issue bodies here carry no
// reaction rollup.

const docsReactions = "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue"

// ghReactionContents are the reactions GitHub accepts (docsReactions).
var ghReactionContents = map[string]bool{"+1": true, "-1": true, "laugh": true, "confused": true,
	"heart": true, "hooray": true, "rocket": true, "eyes": true}

type reaction struct {
	id        int64
	content   string
	user      string
	createdAt time.Time
}

// Reaction is one reaction as tests see it.
type Reaction struct {
	Content, User string
}

// react adds by's reaction content to an issue; created is false when by
// had already reacted so, and the existing reaction is returned.
func (st *store) react(repoName string, number int, content string, by actor) (reaction, bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, is, err := st.lookup(repoName, number)
	if err != nil {
		return reaction{}, false, err
	}
	for _, r := range is.reactions {
		if r.content == content && r.user == by.login {
			return r, false, nil
		}
	}
	r := reaction{id: st.nextID(), content: content, user: by.login, createdAt: st.clock().UTC()}
	is.reactions = append(is.reactions, r)
	return r, true, nil
}

// Reactions lists an issue's reactions in the order they were added.
func (s *Sim) Reactions(repo string, number int) []Reaction {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	_, is, err := s.store.lookup(repo, number)
	if err != nil {
		return nil
	}
	out := make([]Reaction, len(is.reactions))
	for i, r := range is.reactions {
		out[i] = Reaction{Content: r.content, User: r.user}
	}
	return out
}

// ghCreateReaction follows "Create reaction for an issue": content is one
// of eight names (else 422); 201 with the reaction, or 200 with the
// existing one when the user already reacted so.
func (s *Sim) ghCreateReaction(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	var req struct {
		Content string `json:"content"`
	}
	if !decodeJSON(w, r, c, &req) {
		return
	}
	if !ghReactionContents[req.Content] {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "Reaction", Field: "content", Code: "invalid"}}})
		return
	}
	rc, created, err := s.store.react(c.repo, n, req.Content, c.by)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeJSON(w, code, map[string]any{"id": rc.id, "node_id": fmt.Sprintf("REA_sim%d", rc.id),
		"user": s.ghUser(c.base, rc.user), "content": rc.content, "created_at": rc.createdAt.Format(time.RFC3339)})
}

// glAwardEmoji follows "Add a new emoji reaction" on an issue
// (https://docs.gitlab.com/api/emoji_reactions/): name is
// required; a second award of the same name by the same user is refused
// with 404 "has already been taken" (GitLab answers a failed award with
// not_found!, lib/api/award_emoji.rb).
func (s *Sim) glAwardEmoji(w http.ResponseWriter, r *http.Request, c *glCall) {
	n, ok := s.glIID(w, r)
	if !ok {
		return
	}
	m, ok := glDecode(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
		return
	}
	name, ok := glString(m, "name")
	if !ok || name == nil || *name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "name is missing"})
		return
	}
	rc, created, err := s.store.react(c.repo, n, *name, c.by)
	if err != nil {
		s.glStoreError(w, err)
		return
	}
	if !created {
		glMessage(w, http.StatusNotFound, "404 Award Emoji Name has already been taken")
		return
	}
	sn, err := s.store.get(c.repo, n)
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.glStoreError(w, err)
		return
	}
	ts := rc.createdAt.Format("2006-01-02T15:04:05.000Z")
	writeJSON(w, http.StatusCreated, map[string]any{"id": rc.id, "name": rc.content, "user": glUserJSON(c.base, rc.user),
		"created_at": ts, "updated_at": ts, "awardable_id": sn.id, "awardable_type": "Issue"})
}
