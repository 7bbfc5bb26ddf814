package housekeeping_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redistest"
)

// mkTicketDir writes size bytes into {root}/{project}/{ticket} and dates
// every entry at touched.
func mkTicketDir(t *testing.T, root, project, ticket string, size int, touched time.Time) string {
	t.Helper()
	dir := filepath.Join(root, project, ticket)
	if err := os.MkdirAll(filepath.Join(dir, ".agentsmith", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ".agentsmith", "logs", "attempt-1.log")
	if err := os.WriteFile(file, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(dir, ".agentsmith", "logs"), filepath.Join(dir, ".agentsmith"), dir} {
		if err := os.Chtimes(p, touched, touched); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRetentionRemovesOldAndOverCapFinishedTickets(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	root, logs := t.TempDir(), t.TempDir()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := mkTicketDir(t, root, "app", "github_acme_app_1", 100, now.Add(-8*24*time.Hour))
	// Between attempts (its attempts are still counted): old, but kept.
	waiting := mkTicketDir(t, root, "app", "github_acme_app_2", 100, now.Add(-9*24*time.Hour))
	if err := rdb.HSet(context.Background(), keys.Attempts(), "github:acme/app#2", 1).Err(); err != nil {
		t.Fatal(err)
	}
	// Young, but together over the 2,500-byte cap: the oldest go first.
	a := mkTicketDir(t, root, "app", "github_acme_app_3", 1000, now.Add(-3*time.Hour))
	b := mkTicketDir(t, logs, "app", "github_acme_app_4", 1000, now.Add(-2*time.Hour))
	c := mkTicketDir(t, root, "web", "jira_WEB-5", 1000, now.Add(-1*time.Hour))

	r := housekeeping.NewRetention(rdb, housekeeping.RetentionConfig{Roots: []string{root, logs},
		MaxAge: 7 * 24 * time.Hour, MaxBytes: 2500, Clock: func() time.Time { return now }})
	removed, err := r.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{old, a}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, d := range []string{waiting, b, c} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	for _, d := range want {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}

	// Without Redis it cannot tell what is running: nothing goes.
	rdb.Close()
	if removed, err := r.Sweep(context.Background()); err == nil || len(removed) != 0 {
		t.Errorf("sweep without Redis: %q, %v", removed, err)
	}
}
