package trackersim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// The control API under /sim/ lets scripts, the demo and other processes
// drive the sim the way Go tests drive it through the Go API. It is not a
// tracker dialect: no auth, no faults, plain JSON.

func (s *Sim) controlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /sim/issues", s.ctlCreateIssue)
	mux.HandleFunc("GET /sim/issues", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, nonNilIssues(s.Issues()))
	})
	mux.HandleFunc("POST /sim/hooks", s.ctlAddHook)
	mux.HandleFunc("GET /sim/hooks", s.ctlHookStates)
	mux.HandleFunc("POST /sim/faults", s.ctlSetFaults)
	mux.HandleFunc("GET /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.faults.get())
	})
	mux.HandleFunc("GET /sim/stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("GET /sim/writes", func(w http.ResponseWriter, _ *http.Request) {
		ws := s.Writes()
		if ws == nil {
			ws = []Write{}
		}
		writeJSON(w, http.StatusOK, ws)
	})
	// The page's "add trigger label" button, acting as a human.
	mux.HandleFunc("POST /sim/github/{owner}/{repo}/issues/{number}/labels", s.ctlAddLabel)
	// The same for any dialect's repository key ("group/sub/project", "PROJ"):
	// POST /sim/labels?repo=…&number=…&label=….
	mux.HandleFunc("POST /sim/labels", s.ctlAddLabel)
}

func nonNilIssues(is []Issue) []Issue {
	if is == nil {
		return []Issue{}
	}
	return is
}

func ctlError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"message": msg})
}

func (s *Sim) ctlCreateIssue(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Repo   string   `json:"repo"`
		Title  string   `json:"title"`
		Body   string   `json:"body"`
		Labels []string `json:"labels"`
		// As names the user who opens it (default HumanLogin), for trying
		// out who may trigger runs.
		As string `json:"as"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		ctlError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	if req.Repo == "" || req.Title == "" {
		ctlError(w, http.StatusUnprocessableEntity, "repo and title are required")
		return
	}
	s.requestBase(r)
	if req.As == "" {
		req.As = HumanLogin
	}
	n := s.As(req.As).CreateIssue(req.Repo, req.Title, req.Body, req.Labels...)
	writeJSON(w, http.StatusCreated, map[string]int{"number": n})
}

func (s *Sim) ctlAddHook(w http.ResponseWriter, r *http.Request) {
	var h Hook
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&h); err != nil {
		ctlError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	if h.URL == "" {
		ctlError(w, http.StatusUnprocessableEntity, "url is required")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]int64{"id": s.addHook(h)})
}

func (s *Sim) ctlSetFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&f); err != nil {
		ctlError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	s.SetFaults(f)
	writeJSON(w, http.StatusOK, s.faults.get())
}

func (s *Sim) ctlAddLabel(w http.ResponseWriter, r *http.Request) {
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	num := r.PathValue("number")
	if r.PathValue("owner") == "" {
		repo, num = r.FormValue("repo"), r.FormValue("number")
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		ctlError(w, http.StatusNotFound, "no such issue")
		return
	}
	name := r.URL.Query().Get("label")
	if name == "" {
		name = r.FormValue("label")
	}
	if name == "" {
		name = "agent-smith"
	}
	who := r.FormValue("as") // the user adding it; default HumanLogin
	if who == "" {
		who = HumanLogin
	}
	if err := s.As(who).AddLabels(repo, n, name); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrNotFound) {
			code = http.StatusNotFound
		}
		ctlError(w, code, err.Error())
		return
	}
	http.Redirect(w, r, "/#"+issueAnchor(repo, n), http.StatusSeeOther)
}
