package statuspage

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestStatusServesAttemptLogsFromItsRootsOnly(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	root := t.TempDir()
	ref := platforms.Ref{Platform: "github", Project: "app", ID: "acme/app#1"}
	path := lifecycle.LogPath(root, "", ref, 1, 1)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("<script>alert(1)</script> output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("not yours"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, rl := range []runstate.RunLog{
		{Attempt: 1, Instance: "replica-a", Path: path, Started: time.Now()},
		{Attempt: 2, Instance: "replica-b", Path: lifecycle.LogPath(root, "", ref, 1, 2), Started: time.Now()},
		{Attempt: 3, Instance: "replica-a", Path: outside, Started: time.Now()},
	} {
		if err := runstate.RecordRunLog(ctx, rdb, ref, rl); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{RDB: rdb, Instance: "replica-a", Token: "s3cret", LogRoots: []string{lifecycle.LogsRoot(root, ""), ""}})
	q := "/status/logs?ticket=" + "github:acme/app%231"

	if rec := get(t, h, q+"&attempt=1", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", rec.Code)
	}
	rec := get(t, h, q+"&attempt=1", "Bearer s3cret")
	if rec.Code != http.StatusOK || rec.Body.String() != "<script>alert(1)</script> output\n" ||
		!strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("attempt 1: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	if rec := get(t, h, q+"&attempt=2", "Bearer s3cret"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "ran on replica replica-b") {
		t.Errorf("another replica's attempt: %d %q", rec.Code, rec.Body.String())
	}
	// The last attempt by default; its path is outside the roots.
	if rec := get(t, h, q, "Bearer s3cret"); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "not yours") {
		t.Errorf("a path outside the roots: %d %q", rec.Code, rec.Body.String())
	}
	if rec := get(t, h, "/status/logs?ticket=nope", "Bearer s3cret"); rec.Code != http.StatusBadRequest {
		t.Errorf("bad ticket: %d", rec.Code)
	}
}

// A link planted in place of an attempt's log, or of a directory above it,
// is not followed: the page does not serve the root-only file it names.
func TestStatusNeverServesALogThroughALink(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	logs := t.TempDir()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "attempt-1.log")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := platforms.Ref{Platform: "github", Project: "app", ID: "acme/app#1"}
	path := lifecycle.LogPath("", logs, ref, 1, 1)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	// Attempt 2's ticket dir is a link to the secret's directory.
	other := platforms.Ref{Platform: "github", Project: "web", ID: "acme/web#2"}
	if err := os.MkdirAll(filepath.Dir(lifecycle.LogDir("", logs, other)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretDir, lifecycle.LogDir("", logs, other)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, rl := range []runstate.RunLog{
		{Attempt: 1, Instance: "replica-a", Path: path, Started: time.Now()},
		{Attempt: 2, Instance: "replica-a", Path: filepath.Join(lifecycle.LogDir("", logs, other), "attempt-1.log"), Started: time.Now()},
	} {
		if err := runstate.RecordRunLog(ctx, rdb, ref, rl); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{RDB: rdb, Instance: "replica-a", Token: "s3cret", LogRoots: []string{logs}})
	for _, a := range []string{"1", "2"} {
		rec := get(t, h, "/status/logs?ticket=github:acme/app%231&attempt="+a, "Bearer s3cret")
		if rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "root only") {
			t.Errorf("attempt %s through a link: %d %q", a, rec.Code, rec.Body.String())
		}
	}
}
