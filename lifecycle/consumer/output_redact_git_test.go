package consumer_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/gitws"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
)

// gitSecret has the characters Markdown escaping changes ("_", "-").
const gitSecret = "ghp_S3cr3t-T0ken_leak9876"

// markup is the escapes a comment's markup adds to pipeline text: a
// backslash before punctuation and a zero-width space after "@". Text with
// them removed is what the tracker renders.
var markup = strings.NewReplacer("\\", "", "\u200b", "")

// assertNoGitSecret fails when text holds gitSecret raw, base64-encoded, or
// as it renders once markup escapes are removed.
func assertNoGitSecret(t *testing.T, where, text string) {
	t.Helper()
	for name, f := range map[string]string{
		"plain":    gitSecret,
		"base64":   base64.StdEncoding.EncodeToString([]byte(gitSecret)),
		"rendered": gitSecret,
	} {
		in := text
		if name == "rendered" {
			in = markup.Replace(text)
		}
		if strings.Contains(in, f) {
			t.Errorf("%s holds the secret (%s form):\n%s", where, name, text)
		}
	}
}

// observers fans an event out to each of its observers.
type observers []lifecycle.Observer

func (o observers) Observe(ev lifecycle.Event) {
	for _, x := range o {
		x.Observe(ev)
	}
}

// secretWorld runs one executor with its daemon log observed and its
// events written to the real audit stream; it returns what the test reads.
func secretWorld(t *testing.T, w *lifecycletest.World) (*lifecycletest.Recorder, *observer.ObservedLogs, func() []audit.Entry) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	rec := &lifecycletest.Recorder{}
	aw := audit.NewWriter(w.RDB, audit.WriterConfig{ReportInterval: 10 * time.Millisecond})
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		ShutdownGrace: time.Second, KillGrace: 200 * time.Millisecond, WorkDir: filepath.Join(t.TempDir(), "work"),
		TakeWait: 100 * time.Millisecond, Logger: zap.New(core), Observer: observers{rec, aw},
	})
	ctx, cancel := context.WithCancel(context.Background())
	actx, acancel := context.WithCancel(context.Background())
	var wg, awg sync.WaitGroup
	wg.Go(func() { _ = ex.Run(ctx) })
	awg.Go(func() { _ = aw.Run(actx) })
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait(); acancel(); awg.Wait() }) }
	t.Cleanup(stop)
	return rec, logs, func() []audit.Entry {
		stop()
		entries, err := audit.NewReader(w.RDB).Recent(context.Background(), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			t.Fatal("the audit stream is empty")
		}
		return entries
	}
}

func assertLogsHoldNoGitSecret(t *testing.T, logs *observer.ObservedLogs) {
	t.Helper()
	for _, e := range logs.All() {
		text := e.Message
		for k, v := range e.ContextMap() {
			text += " " + k + "=" + fmt.Sprint(v)
		}
		assertNoGitSecret(t, "daemon log entry", text)
	}
}

// A pipeline that names a path after its secret so that the real git's
// "git add --all" fails quoting it ("error: invalid path
// '<secret>/.GIT/x'") gets the secret into neither the failure comment's
// "not pushed" note (escaped for Markdown, where "ghp\_…" would render as
// the secret), nor the audit stream, nor the daemon's log.
func TestGitErrorNamingASecretReachesNoCommentAuditOrLog(t *testing.T) {
	w := lifecycletest.New(t, 1)
	ws, err := gitws.New(gitws.Config{URL: bareRemote(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	p.Workspace = ws
	p.Pipeline.Secrets = map[string]string{"SECRET": gitSecret}
	p.Redact = redact.New(gitSecret)
	p.Pipeline.Command = []string{"sh", "-c", `mkdir -p "$SECRET/.GIT" && touch "$SECRET/.GIT/x"; exit 1`}
	rec, logs, auditEntries := secretWorld(t, w)

	n := w.ClaimIssue(t, "leaky git path")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	cs := w.Comments(t, n)
	if len(cs) == 0 || !strings.Contains(cs[0], "**not pushed** (") {
		t.Fatalf("no failure comment with the save's error:\n%q", cs)
	}
	if !strings.Contains(cs[0], "invalid path") {
		t.Fatalf("the save did not fail on the invalid path (git changed?):\n%s", cs[0])
	}
	for i, c := range cs {
		assertNoGitSecret(t, fmt.Sprintf("comment %d", i), c)
	}
	for _, e := range auditEntries() {
		assertNoGitSecret(t, "audit entry", fmt.Sprintf("%+v", e.Event))
	}
	assertLogsHoldNoGitSecret(t, logs)
}

// A work branch that cannot be prepared fails the attempt with git's
// stderr as its result ("failed to start: work branch …: <git's error>"),
// which quotes the remote's path: with a secret in it, that secret reaches
// neither the failure comment, nor the audit stream's reason (what
// /status.json shows), nor the daemon's transition log.
func TestPrepareErrorNamingASecretReachesNoCommentAuditOrLog(t *testing.T) {
	w := lifecycletest.New(t, 1)
	ws, err := gitws.New(gitws.Config{URL: filepath.Join(t.TempDir(), gitSecret, "origin.git"), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	p.Workspace = ws
	p.Redact = redact.New(gitSecret)
	p.Pipeline.Command = []string{"true"}
	rec, logs, auditEntries := secretWorld(t, w)

	n := w.ClaimIssue(t, "unpreparable")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	ev, _ := rec.Find("failed")
	if !strings.Contains(ev.Reason, "failed to start: work branch") || !strings.Contains(ev.Reason, redact.Replacement) {
		t.Errorf("reason %q: not the redacted Prepare error", ev.Reason)
	}
	for i, c := range w.Comments(t, n) {
		assertNoGitSecret(t, fmt.Sprintf("comment %d", i), c)
	}
	for _, e := range auditEntries() {
		assertNoGitSecret(t, "audit entry", fmt.Sprintf("%+v", e.Event))
	}
	assertLogsHoldNoGitSecret(t, logs)
}
