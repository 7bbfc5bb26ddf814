package jira_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// The editmeta read that explains a refused label edit is made after the
// ticket's label lock is released: it only words the refusal, and the
// lock serialises label writes, so holding it over one more round trip
// would only keep other writers of the ticket waiting.
func TestRefusalIsExplainedOutsideTheLabelLock(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	const project = "EML"
	ref := platforms.Ref{Platform: jira.Platform, Project: "p", ID: project + "-1"}
	var metaReads, underLock atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/editmeta") {
			metaReads.Add(1)
			if n, err := rdb.Exists(r.Context(), keys.JiraLabelLock(ref.Key())).Result(); err != nil || n != 0 {
				underLock.Add(1)
			}
		}
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tr, err := jira.New(jira.Options{BaseURL: srv.URL + "/jira/", Repo: project, Project: "p", Token: simToken,
		Email: "bot@example.com", Locker: redisLocker{rdb: rdb}, Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s.CreateIssue(project, "refused", "", "trigger")
	s.SetJiraLabelsOnEditScreen(project, "Task", false)
	tk, err := tr.Get(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Relabel(t.Context(), tk, nil, "extra"); !errors.Is(err, platforms.ErrRejected) {
		t.Fatalf("relabel: %v, want a refusal", err)
	}
	if metaReads.Load() != 1 || underLock.Load() != 0 {
		t.Fatalf("%d editmeta reads, %d of them under the label lock; want 1, none under it", metaReads.Load(), underLock.Load())
	}
}
