package trackersim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Moves: a renamed repository and a transferred issue, as GitHub answers
// requests for their old URLs.
//
//   - A renamed (or transferred) repository keeps answering at its old
//     name with a redirect to /repositories/{id}/… and the rest of the
//     path: 301 for GET and 307 for other methods, which clients are asked
//     to follow ("HTTP redirects",
//     https://docs.github.com/rest/overview/resources-in-the-rest-api#http-redirects;
//     18F/charlie#85 logged the 307 of a POST to a moved repository's
//     issues, body {"message":"Moved Permanently","url":…}).
//   - A transferred issue's old URL redirects to the issue in its new
//     repository, under its new number: GitHub "answers the old URL with a
//     301 to the new location" (MarcusJellinghaus/mcp-workspace#256, #72
//     became #220 of another repository). Its sub-resources do not follow:
//     GET …/comments and …/events of the old issue answer 404
//     (Systemorph/MeshWeaver#4629, measured; golang/build#26). A write to
//     the old issue or its sub-resources answers 307 to the same place in
//     the new one, as writes to moved resources do.

// movedIssue is where a transferred issue went.
type movedIssue struct {
	repo   string
	number int
}

// RenameRepo renames a repository (GitHub dialect). Its issues keep their
// numbers; requests for the old name redirect to the repository's id.
func (s *Sim) RenameRepo(from, to string) error {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[from]
	if !ok {
		return fmt.Errorf("rename %s: %w", from, ErrNotFound)
	}
	if _, taken := st.repos[to]; taken {
		return fmt.Errorf("rename %s to %s: %w", from, to, errInvalid)
	}
	delete(st.repos, from)
	r.fullName = to
	st.repos[to] = r
	if st.renamed == nil {
		st.renamed = map[string]string{}
	}
	st.renamed[from] = to
	return nil
}

// TransferIssue moves issue n of repo to repository to (created if need
// be), where it takes the next number, which it returns. The old URL
// redirects there.
func (s *Sim) TransferIssue(repo string, n int, to string) (int, error) {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	r, is, err := st.lookup(repo, n)
	if err != nil {
		return 0, err
	}
	dst := st.ensureRepo(to)
	delete(r.issues, n)
	is.number = st.takeNumber(dst)
	dst.issues[is.number] = is
	for _, l := range is.labels {
		st.labelFor(dst, l)
	}
	if st.transferred == nil {
		st.transferred = map[string]movedIssue{}
	}
	st.transferred[repo+"#"+strconv.Itoa(n)] = movedIssue{repo: to, number: is.number}
	return is.number, nil
}

// moved reports where a request for repo (and issue n, when n > 0) now
// belongs: the repository's id and, for a transferred issue, its number
// there.
func (st *store) moved(repo string, n int) (id int64, number int, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if to, ok := st.transferred[repo+"#"+strconv.Itoa(n)]; ok && n > 0 {
		if r, ok := st.repos[to.repo]; ok {
			return r.id, to.number, true
		}
	}
	if _, ok := st.repos[repo]; ok {
		return 0, 0, false
	}
	if to, ok := st.renamed[repo]; ok {
		if r, ok := st.repos[to]; ok {
			return r.id, n, true
		}
	}
	return 0, 0, false
}

// repoByID is the name of the repository with id.
func (st *store) repoByID(id int64) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for name, r := range st.repos {
		if r.id == id {
			return name, true
		}
	}
	return "", false
}

// ghRedirectMoved answers a request for a renamed repository or a
// transferred issue (see above) and reports whether it did; it calls
// before just before it writes the answer.
func (s *Sim) ghRedirectMoved(w http.ResponseWriter, r *http.Request, c *ghCall, before func()) bool {
	if c.repo == "" {
		return false
	}
	n, _ := strconv.Atoi(r.PathValue("number"))
	id, number, ok := s.store.moved(c.repo, n)
	if !ok {
		return false
	}
	esc := r.URL.EscapedPath()
	i := strings.Index(esc, "/repos/")
	if i < 0 {
		return false
	}
	rest := esc[i+len("/repos/"):]
	for range 2 { // owner, repo
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			rest = rest[j+1:]
		} else {
			rest = ""
		}
	}
	if n > 0 && number != n {
		// A transferred issue: rest is "issues/{n}" and maybe a sub-resource.
		sub := strings.TrimPrefix(rest, "issues/"+strconv.Itoa(n))
		if r.Method == http.MethodGet && sub != "" {
			before()
			writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
			return true
		}
		rest = "issues/" + strconv.Itoa(number) + sub
	}
	loc := c.base + esc[:i] + "/repositories/" + strconv.FormatInt(id, 10) + "/" + rest
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	code := http.StatusMovedPermanently
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		code = http.StatusTemporaryRedirect
	}
	before()
	w.Header().Set("Location", loc)
	writeJSON(w, code, map[string]string{"message": "Moved Permanently", "url": loc, "documentation_url": docsRedirects})
	return true
}

const docsRedirects = "https://docs.github.com/rest/overview/resources-in-the-rest-api#http-redirects"

// ghRepositoryByID serves /repositories/{id}/… as the same request for the
// repository's current name.
func (s *Sim) ghRepositoryByID(mux *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		name, ok := s.store.repoByID(id)
		if err != nil || !ok {
			writeGHError(w, http.StatusNotFound, "Not Found", docsREST)
			return
		}
		esc := r.URL.EscapedPath()
		marker := "/repositories/" + r.PathValue("id") + "/"
		i := strings.Index(esc, marker)
		if i < 0 {
			writeGHError(w, http.StatusNotFound, "Not Found", docsREST)
			return
		}
		owner, repo, _ := strings.Cut(name, "/")
		newEsc := esc[:i] + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/" + esc[i+len(marker):]
		path, err := url.PathUnescape(newEsc)
		if err != nil {
			writeGHError(w, http.StatusNotFound, "Not Found", docsREST)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = path, newEsc
		mux.ServeHTTP(w, r2)
	}
}
