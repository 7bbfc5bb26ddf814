package consumer_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
)

// leakSecret is a pipeline secret with characters every encoding changes.
const leakSecret = "s3cr3t/T0ken+val=ue"

// secretForms is every form of leakSecret the daemon must not show.
func secretForms() map[string]string {
	b := []byte(leakSecret)
	return map[string]string{
		"plain":      leakSecret,
		"base64":     base64.StdEncoding.EncodeToString(b),
		"base64-raw": base64.RawStdEncoding.EncodeToString(b),
		"base64url":  base64.URLEncoding.EncodeToString(b),
		"basic":      base64.StdEncoding.EncodeToString([]byte("x-access-token:" + leakSecret)),
		"query":      url.QueryEscape(leakSecret),
		"path":       url.PathEscape(leakSecret),
	}
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for name, f := range secretForms() {
		if strings.Contains(text, f) {
			t.Errorf("%s holds the secret (%s form %q)", where, name, f)
		}
	}
}

// leakyPipeline prints its secret plainly, encoded, and split across two
// writes; prints GitLab quick actions and a bot mention; writes them to its
// progress file and its result (summary, link title, link URL); and fails
// when the ticket's title starts with "fail".
func leakyPipeline(t *testing.T) (argv []string, env map[string]string) {
	t.Helper()
	f := secretForms()
	result, err := json.Marshal(map[string]any{
		"summary": "Done with " + leakSecret + " (" + f["base64"] + ")\n/close\n/title pwned\n/label ~x\n/move other/project\n@dependabot merge",
		"links": []map[string]string{
			{"title": "PR for " + leakSecret, "url": "https://example.com/pr/1"},
			{"title": "leak", "url": "https://example.com/x?t=" + f["query"]},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	half := len(leakSecret) / 2
	env = map[string]string{"B64": f["base64"], "B64URL": f["base64url"], "BASIC": f["basic"], "QS": f["query"], "PS": f["path"],
		"HALF1": leakSecret[:half], "HALF2": leakSecret[half:], "RESULT": string(result)}
	// The pause between the halves makes the two writes reach the daemon
	// as two reads; the test holds without it (they would be one read).
	script := `printf 'progress %s\n/close\n/title pwned\n' "$SECRET" >> "$AGENTSMITH_PROGRESS_FILE"
printf 'plain %s\n' "$SECRET"
printf 'b64 %s\nb64url %s\nbasic %s\nqs %s\nps %s\n' "$B64" "$B64URL" "$BASIC" "$QS" "$PS"
printf 'split %s' "$HALF1"; sleep 0.2; printf '%s end\n' "$HALF2"
printf '/close\n/title pwned\n/label ~x\n/move other/project\n@dependabot merge\n'
printf '%s' "$RESULT" > "$AGENTSMITH_RESULT_FILE"
case "$AGENTSMITH_TITLE" in fail*) exit 1;; esac`
	return []string{"sh", "-c", script}, env
}

// A pipeline that prints its secret in every common form and prints quick
// actions gets none of them onto its GitLab ticket (comments, progress
// comment, result summary and links, failure tail), into its attempt log
// (what agentsmithctl logs and the status page show) or into the daemon's
// log (nor does its persist command's output); and its ticket stays open, titled and labelled as the lifecycle
// left it.
func TestPipelineOutputLeaksNoSecretAndRunsNoQuickAction(t *testing.T) {
	w := lifecycletest.New(t, 1)
	srv := httptest.NewServer(w.Sim.Handler())
	t.Cleanup(srv.Close)
	w.Sim.CreateRepo("other/project")
	tr, err := gitlab.New(gitlab.Options{BaseURL: srv.URL + "/gitlab/api/v4/", Repo: lifecycletest.Repo,
		Project: lifecycletest.Project, Token: "t", Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	p.Platform, p.Tracker, p.ProgressComment = gitlab.Platform, tr, true
	p.Pipeline.Secrets = map[string]string{"SECRET": leakSecret}
	p.Redact = redact.New(leakSecret)
	argv, env := leakyPipeline(t)

	dir := t.TempDir()
	core, logs := observer.New(zap.DebugLevel)
	consumertest.StartExecutorWith(t, w, dir, time.Second, func(c *consumer.ExecutorConfig) {
		p.Pipeline.Command, p.Pipeline.Env = argv, env
		p.Pipeline.PersistCommand = []string{"sh", "-c", `printf 'persist %s\n' "$SECRET"; exit 1`}
		c.Logger = zap.New(core)
		c.ProgressInterval = time.Millisecond
	})
	ref := func(n int) platforms.Ref {
		return platforms.Ref{Platform: gitlab.Platform, Project: lifecycletest.Project, ID: gitlab.FormatID(lifecycletest.Repo, n)}
	}
	titles := map[int]string{}
	for _, title := range []string{"fail: leaky", "succeed: leaky"} {
		n := w.Sim.CreateIssue(lifecycletest.Repo, title, "", "agent-smith")
		titles[n] = title
		if res, err := w.Claims.Claim(t.Context(), ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
			t.Fatalf("claim %d: %+v %v", n, res, err)
		}
		eventually.Wait(t, 20*time.Second, "the run of "+title+" to end", func() bool {
			is, _ := w.Sim.Issue(lifecycletest.Repo, n)
			s := w.Labels.StateOf(is.Labels)
			return (s == lifecycle.Done || s == lifecycle.Failed) && len(is.Comments) >= 2
		})
	}

	const statusToken = "status-token-of-the-operator-0123456789"
	status := statuspage.New(statuspage.Config{RDB: w.RDB, Queue: w.Queue, Instance: "exec-1", Token: statusToken,
		LogRoots: []string{lifecycle.LogsRoot(filepath.Join(dir, "work"), "")}})
	for n, title := range titles {
		is, _ := w.Sim.Issue(lifecycletest.Repo, n)
		if !is.Open || is.Title != title {
			t.Errorf("%s: open %v, title %q: a pipeline line ran as a quick action", title, is.Open, is.Title)
		}
		for _, l := range is.Labels {
			if !strings.HasPrefix(l, "agent-smith") {
				t.Errorf("%s: label %q added by a pipeline line", title, l)
			}
		}
		for i, c := range is.Comments {
			assertNoSecret(t, title+" comment "+string(rune('0'+i)), c.Body)
			if strings.Contains(c.Body, "@dependabot") {
				t.Errorf("%s comment %d addresses @dependabot:\n%s", title, i, c.Body)
			}
		}
		b, err := os.ReadFile(lifecycle.LogPath(filepath.Join(dir, "work"), "", ref(n), 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		assertNoSecret(t, title+" attempt log", string(b))
		// What the status page shows of it (agentsmithctl logs prints
		// the file as it is).
		for _, page := range []string{"/status/logs?attempt=1&ticket=", "/status/ticket?ticket="} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", page+url.QueryEscape(gitlab.Platform+":"+ref(n).ID), nil)
			req.Header.Set("Authorization", "Bearer "+statusToken)
			status.ServeHTTP(rec, req)
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), "split "+redact.Replacement+" end") {
				t.Errorf("%s %s: %d, without the redacted output:\n%s", title, page, rec.Code, rec.Body)
			}
			assertNoSecret(t, title+" "+page, rec.Body.String())
		}
		if !strings.Contains(string(b), "split "+redact.Replacement+" end") {
			t.Errorf("%s attempt log lacks the redacted split line:\n%s", title, b)
		}
	}
	if _, ok := w.Sim.Issue("other/project", 1); ok {
		t.Error("a pipeline line moved the ticket to other/project")
	}
	lines := 0
	for _, e := range logs.All() {
		text := e.Message
		for k, v := range e.ContextMap() {
			text += " " + k + "=" + strings.ReplaceAll(toString(v), "\n", " ")
		}
		if e.Message == "pipeline output" {
			lines++
		}
		assertNoSecret(t, "daemon log entry", text)
	}
	if lines == 0 {
		t.Error("the daemon logged no pipeline output line at debug level")
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
