package trackersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// ghMaxLabelChars is the longest label name GitHub takes, in characters.
// A longer one, in a label write to an issue or a label's creation or
// rename, is refused with the 422 below, the body GitHub answers
// (github/docs#32156, semantic-release/github#518):
//
//	{"message":"Validation Failed","errors":[{"resource":"Label","code":"custom",
//	 "field":"name","message":"name is too long (maximum is 50 characters)"}]}
//
// platforms/github's descriptor says the same (LabelLimit), and config
// refuses a label prefix or stage name that would make a longer label.
const ghMaxLabelChars = 50

// ghLabelTooLong answers GitHub's 422 and reports true when a name in
// names is longer than ghMaxLabelChars; the write is not applied.
func ghLabelTooLong(w http.ResponseWriter, c *ghCall, names ...string) bool {
	for _, n := range names {
		if utf8.RuneCountInString(n) > ghMaxLabelChars {
			writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
				Errors: []ghFieldError{{Resource: "Label", Code: "custom", Field: "name",
					Message: fmt.Sprintf("name is too long (maximum is %d characters)", ghMaxLabelChars)}}})
			return true
		}
	}
	return false
}

// GitHub's label endpoints, on an issue and on a repository
// (https://docs.github.com/en/rest/issues/labels).

func (s *Sim) ghListIssueLabels(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	sn, err := s.store.get(c.repo, n)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	lo, hi := s.paginate(w, r, c, len(sn.labels))
	out := make([]ghLabel, 0, hi-lo)
	for _, l := range sn.labels[lo:hi] {
		out = append(out, s.ghLabel(c.base, c.repo, l))
	}
	s.writeCollection(w, r, out)
}

// ghAddLabels and ghSetLabels accept the bodies GitHub documents: a bare
// array of names (what go-github sends), {"labels": [...]}, or either with
// {"name": ...} objects. Both answer with the issue's labels.
func (s *Sim) ghAddLabels(w http.ResponseWriter, r *http.Request, c *ghCall) {
	s.labelWrite(w, r, c, func(labels []string) update { return update{Add: labels} })
}

func (s *Sim) ghSetLabels(w http.ResponseWriter, r *http.Request, c *ghCall) {
	s.labelWrite(w, r, c, func(labels []string) update { return update{Labels: &labels} })
}

func (s *Sim) labelWrite(w http.ResponseWriter, r *http.Request, c *ghCall, mk func([]string) update) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	var raw json.RawMessage
	if !decodeJSON(w, r, c, &raw) {
		return
	}
	labels, ok := parseLabelList(raw)
	if !ok {
		var wrapped struct {
			Labels json.RawMessage `json:"labels"`
		}
		if json.Unmarshal(raw, &wrapped) == nil {
			labels, ok = parseLabelList(wrapped.Labels)
		}
	}
	if !ok {
		writeGHError(w, http.StatusBadRequest, "Problems parsing JSON", c.doc)
		return
	}
	if ghLabelTooLong(w, c, labels...) {
		return
	}
	sn, _, ok := s.applyWrite(w, r, c, n, mk(labels))
	if !ok {
		return
	}
	s.writeLabels(w, r, c, sn)
}

// writeLabels answers a label write with the issue's full label list, as
// GitHub does: every label on the issue now, other writers' included. Its
// ETag is the list's own, not the issue's: a client cannot learn the issue's
// new version from a label write.
func (s *Sim) writeLabels(w http.ResponseWriter, r *http.Request, c *ghCall, sn snapshot) {
	out := make([]ghLabel, len(sn.labels))
	for i, l := range sn.labels {
		out[i] = s.ghLabel(c.base, c.repo, l)
	}
	body, err := json.Marshal(out)
	if err != nil {
		writeGHError(w, http.StatusInternalServerError, "Server Error", c.doc)
		return
	}
	w.Header().Set("ETag", s.requestETag(r, bodyETag(body)))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

func (s *Sim) ghRemoveLabel(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	name := r.PathValue("name") // unescaped by ServeMux ("agent-smith%3Adone" → "agent-smith:done")
	sn, _, ok := s.applyWrite(w, r, c, n, update{Remove: []string{name}})
	if !ok {
		return
	}
	s.writeLabels(w, r, c, sn)
}

func (s *Sim) ghRemoveAllLabels(w http.ResponseWriter, r *http.Request, c *ghCall) {
	n, ok := issueNumber(w, r, c)
	if !ok {
		return
	}
	none := []string{}
	if _, _, ok := s.applyWrite(w, r, c, n, update{Labels: &none}); !ok {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Sim) ghListRepoLabels(w http.ResponseWriter, r *http.Request, c *ghCall) {
	ls, err := s.store.repoLabels(c.repo)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	lo, hi := s.paginate(w, r, c, len(ls))
	out := make([]ghLabel, 0, hi-lo)
	for _, l := range ls[lo:hi] {
		out = append(out, s.ghLabel(c.base, c.repo, l))
	}
	s.writeCollection(w, r, out)
}

func (s *Sim) ghGetLabel(w http.ResponseWriter, r *http.Request, c *ghCall) {
	ls, err := s.store.repoLabels(c.repo)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	for _, l := range ls {
		if l.name == r.PathValue("name") {
			s.writeCollection(w, r, s.ghLabel(c.base, c.repo, l))
			return
		}
	}
	writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
}

func (s *Sim) ghCreateLabel(w http.ResponseWriter, r *http.Request, c *ghCall) {
	var req struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if !decodeJSON(w, r, c, &req) {
		return
	}
	if req.Name == "" {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "Label", Field: "name", Code: "missing_field"}}})
		return
	}
	if ghLabelTooLong(w, c, req.Name) {
		return
	}
	l, exists, err := s.store.createLabel(c.repo, req.Name, req.Color, req.Description, true)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	if exists {
		writeLabelExists(w, c)
		return
	}
	out := s.ghLabel(c.base, c.repo, l)
	w.Header().Set("Location", out.URL)
	writeJSON(w, http.StatusCreated, out)
}

// ghUpdateLabel is "Update a label"; only the rename is applied, and the
// label keeps its id and node_id (store.renameLabel). The new name is
// new_name, or name as REST v3 documented it and go-github's EditLabel
// still sends it (a *Label body).
func (s *Sim) ghUpdateLabel(w http.ResponseWriter, r *http.Request, c *ghCall) {
	var req struct {
		NewName string `json:"new_name"`
		Name    string `json:"name"`
	}
	if !decodeJSON(w, r, c, &req) {
		return
	}
	if req.NewName == "" {
		req.NewName = req.Name
	}
	name := r.PathValue("name")
	if req.NewName == "" || req.NewName == name {
		ls, err := s.store.repoLabels(c.repo)
		if err != nil {
			s.writeStoreError(w, c, err)
			return
		}
		for _, l := range ls {
			if l.name == name {
				writeJSON(w, http.StatusOK, s.ghLabel(c.base, c.repo, l))
				return
			}
		}
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	if ghLabelTooLong(w, c, req.NewName) {
		return
	}
	l, exists, err := s.store.renameLabel(c.repo, name, req.NewName)
	if err != nil {
		s.writeStoreError(w, c, err)
		return
	}
	if exists {
		writeLabelExists(w, c)
		return
	}
	writeJSON(w, http.StatusOK, s.ghLabel(c.base, c.repo, l))
}

// writeLabelExists is GitHub's 422 for a label name already taken.
func writeLabelExists(w http.ResponseWriter, c *ghCall) {
	writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
		Errors: []ghFieldError{{Resource: "Label", Field: "name", Code: "already_exists"}}})
}

// parseLabelList reads a JSON array of label names or {"name": …} objects.
func parseLabelList(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var name string
		if json.Unmarshal(it, &name) == nil {
			out = append(out, name)
			continue
		}
		var obj struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(it, &obj) != nil || obj.Name == "" {
			return nil, false
		}
		out = append(out, obj.Name)
	}
	return out, true
}
