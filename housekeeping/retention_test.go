package housekeeping_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// mkTicketDir writes size bytes into {root}/{project}/{ticket}.
func mkTicketDir(t *testing.T, root, project, ticket string, size int) string {
	t.Helper()
	dir := filepath.Join(root, project, ticket)
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "out.bin"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// used writes the ticket's last-use mark, as the executor does.
func used(t *testing.T, logs, project, ticket string, at time.Time) {
	t.Helper()
	if err := lifecycle.MarkTicketDirUsed(logs, filepath.Join(project, ticket), at); err != nil {
		t.Fatal(err)
	}
}

func TestRetentionRemovesOldAndOverCapFinishedTickets(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	root, logs := t.TempDir(), t.TempDir()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := mkTicketDir(t, root, "app", "github_acme_app_1", 100)
	used(t, logs, "app", "github_acme_app_1", now.Add(-8*24*time.Hour))
	// Between attempts (its attempts are still counted): old, but kept.
	waiting := mkTicketDir(t, root, "app", "github_acme_app_2", 100)
	used(t, logs, "app", "github_acme_app_2", now.Add(-9*24*time.Hour))
	if err := rdb.HSet(context.Background(), keys.Attempts(), "github:acme/app#2", 1).Err(); err != nil {
		t.Fatal(err)
	}
	// Young, but together over the 2.5 MiB cap: the least recently
	// used go first, the logs dir with the work dir.
	a := mkTicketDir(t, root, "app", "github_acme_app_3", 1<<20)
	used(t, logs, "app", "github_acme_app_3", now.Add(-3*time.Hour))
	b := mkTicketDir(t, logs, "app", "github_acme_app_4", 1<<20)
	used(t, logs, "app", "github_acme_app_4", now.Add(-2*time.Hour))
	c := mkTicketDir(t, root, "web", "jira_WEB-5", 1<<20)
	used(t, logs, "web", "jira_WEB-5", now.Add(-1*time.Hour))

	r := housekeeping.NewRetention(rdb, housekeeping.RetentionConfig{WorkDir: root, LogsDir: logs,
		MaxAge: 7 * 24 * time.Hour, MaxBytes: 5 << 19, Clock: func() time.Time { return now }})
	removed, err := r.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{old, filepath.Join(logs, "app", "github_acme_app_1"), a, filepath.Join(logs, "app", "github_acme_app_3")}
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

// touchAll sets every time in dir with touch -d, as a pipeline can in its
// own work dir (or in any work dir its user can write).
func touchAll(t *testing.T, dir, when string) {
	t.Helper()
	if out, err := exec.Command("find", dir, "-exec", "touch", "-h", "-d", when, "{}", "+").CombinedOutput(); err != nil {
		t.Fatalf("touch -d %s: %v\n%s", when, err, out)
	}
}

// Retention dates a ticket by the daemon's own mark, never by the work
// dir's file times: a pipeline that dates another ticket's work dir ten
// years back cannot have it removed, and one that dates its own ten years
// ahead cannot keep it past max_age.
func TestRetentionIgnoresTimesAPipelineSets(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	root, logs := t.TempDir(), t.TempDir()
	now := time.Now()
	victim := mkTicketDir(t, root, "app", "github_acme_app_1", 10)
	used(t, logs, "app", "github_acme_app_1", now.Add(-time.Hour))
	touchAll(t, victim, "10 years ago")
	hoarder := mkTicketDir(t, root, "app", "github_acme_app_2", 10)
	used(t, logs, "app", "github_acme_app_2", now.Add(-8*24*time.Hour))
	touchAll(t, hoarder, "10 years")
	// A work dir the daemon has no mark of (left by an older version) is
	// dated from when retention first finds it, not by its file times.
	unmarked := mkTicketDir(t, root, "app", "github_acme_app_3", 10)
	touchAll(t, unmarked, "10 years ago")

	clock := now
	r := housekeeping.NewRetention(rdb, housekeeping.RetentionConfig{WorkDir: root, LogsDir: logs,
		MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, Clock: func() time.Time { return clock }})
	removed, err := r.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{hoarder, filepath.Join(logs, "app", "github_acme_app_2")}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q (the dir dated into the future, only)", removed, want)
	}
	for _, d := range []string{victim, unmarked} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s, dated ten years back by a pipeline, was removed: %v", d, err)
		}
	}
	// Past max_age after it was first found, the unmarked dir goes too.
	clock = now.Add(7*24*time.Hour + time.Minute)
	used(t, logs, "app", "github_acme_app_1", clock)
	if removed, err := r.Sweep(context.Background()); err != nil || !slices.Contains(removed, unmarked) || slices.Contains(removed, victim) {
		t.Errorf("a week later: removed %q, %v", removed, err)
	}
}

// sparse makes a file of the largest apparent size the file system allows
// (100 TiB; ext4 stops at 16 TiB) that takes no blocks, as `truncate -s
// 100T` in a work dir does.
func sparse(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int64{100 << 40, 16<<40 - 4096, 1 << 40} {
		if err = f.Truncate(n); err == nil {
			return n
		}
	}
	t.Fatalf("truncate: %v", err)
	return 0
}

// A pipeline's sparse file counts what it stores, not its length: it
// cannot push the total over max_bytes and get the least recently used
// finished tickets removed. Nor can hard links to one file count it twice.
func TestRetentionCountsBlocksNotApparentSizes(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	root, logs := t.TempDir(), t.TempDir()
	now := time.Now()
	a := mkTicketDir(t, root, "app", "github_acme_app_1", 1<<20)
	used(t, logs, "app", "github_acme_app_1", now.Add(-3*time.Hour))
	b := mkTicketDir(t, root, "app", "github_acme_app_2", 1<<20)
	used(t, logs, "app", "github_acme_app_2", now.Add(-2*time.Hour))
	hoarder := mkTicketDir(t, root, "app", "github_acme_app_3", 1<<20)
	used(t, logs, "app", "github_acme_app_3", now.Add(-time.Hour))
	n := sparse(t, filepath.Join(hoarder, "huge"))
	for i := range 64 {
		if err := os.Link(filepath.Join(hoarder, "src", "out.bin"), filepath.Join(hoarder, fmt.Sprint("link", i))); err != nil {
			t.Fatal(err)
		}
	}

	r := housekeeping.NewRetention(rdb, housekeeping.RetentionConfig{WorkDir: root, LogsDir: logs,
		MaxAge: 7 * 24 * time.Hour, MaxBytes: 16 << 20, Clock: func() time.Time { return now }})
	removed, err := r.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Errorf("a %d-byte sparse file and 64 hard links in one work dir got %q removed under a 16 MiB cap the three tickets fit in", n, removed)
	}
	for _, d := range []string{a, b, hoarder} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// A ticket's git dir ({work_dir}-git/{project}/{ticket}) is one with its
// work dir and logs dir: removed with them, before the logs dir that holds
// the mark, and counted in the size, so that a clone per ticket ever run
// does not fill the disk.
func TestRetentionRemovesAndCountsTheGitDir(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	root, logs := filepath.Join(t.TempDir(), "work"), t.TempDir()
	gitRoot := lifecycle.GitRoot(root)
	now := time.Now()
	old := mkTicketDir(t, root, "app", "github_acme_app_1", 10)
	oldGit := mkTicketDir(t, gitRoot, "app", "github_acme_app_1", 10)
	used(t, logs, "app", "github_acme_app_1", now.Add(-8*24*time.Hour))
	// Small work dirs, 1 MiB clones: together over the 1.5 MiB cap.
	a := mkTicketDir(t, root, "app", "github_acme_app_2", 10)
	aGit := mkTicketDir(t, gitRoot, "app", "github_acme_app_2", 1<<20)
	used(t, logs, "app", "github_acme_app_2", now.Add(-2*time.Hour))
	b := mkTicketDir(t, root, "app", "github_acme_app_3", 10)
	bGit := mkTicketDir(t, gitRoot, "app", "github_acme_app_3", 1<<20)
	used(t, logs, "app", "github_acme_app_3", now.Add(-time.Hour))

	r := housekeeping.NewRetention(rdb, housekeeping.RetentionConfig{WorkDir: root, LogsDir: logs,
		MaxAge: 7 * 24 * time.Hour, MaxBytes: 3 << 19, Clock: func() time.Time { return now }})
	removed, err := r.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		old, oldGit, filepath.Join(logs, "app", "github_acme_app_1"),
		a, aGit, filepath.Join(logs, "app", "github_acme_app_2"),
	}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q (work, git, logs dir of each)", removed, want)
	}
	for _, d := range want {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
	for _, d := range []string{b, bGit} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
