package consumer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/pkg/nofollow"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// progressOf is readProgress of path by the test's own uid, failing t on a
// refusal.
func progressOf(t *testing.T, path string) string {
	t.Helper()
	s, err := readProgress(path, os.Geteuid())
	if err != nil {
		t.Fatalf("readProgress(%s): %v", path, err)
	}
	return s
}

func TestReadProgressShowsTheBoundedTailOfCompleteLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := progressOf(t, path); got != "" {
		t.Errorf("no file: %q, want nothing", got)
	}
	write("half a line")
	if got := progressOf(t, path); got != "" {
		t.Errorf("a line still being written: %q, want nothing yet", got)
	}
	write("one\ntwo\nthr")
	if got := progressOf(t, path); got != "one\ntwo" {
		t.Errorf("got %q, want the complete lines", got)
	}
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "step %d\n", i)
	}
	write(b.String())
	got := progressOf(t, path)
	if lines := strings.Split(got, "\n"); len(lines) != maxProgressLines || lines[len(lines)-1] != "step 99" {
		t.Errorf("100 lines: kept %d ending %q, want the last %d", len(lines), lines[len(lines)-1], maxProgressLines)
	}
	// A huge file: only its tail is read and shown, starting on a line.
	write(strings.Repeat("x", 10<<20) + "\nlast \x1b[31mred\x1b[0m line\n")
	if got := progressOf(t, path); got != "last [31mred[0m line" {
		t.Errorf("huge file: %q, want its last line without the escape bytes", got)
	}
	// A symlink to a file only the daemon should read is not followed.
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if got, err := readProgress(link, os.Geteuid()); got != "" || !errors.Is(err, nofollow.ErrRefused) {
		t.Errorf("symlink: %q, %v; want it refused", got, err)
	}
}

func TestProgressBodyFencesHostileLines(t *testing.T) {
	lines := "ok\n````\n@alice [x](javascript:alert(1))"
	body := progressBody("agent-smith", 2, "r1", lines)
	// The mention is broken too (platforms.NoMentions).
	if !strings.Contains(body, "\n`````\n"+platforms.NoMentions(lines)+"\n`````\n") {
		t.Errorf("lines not in a fence longer than their backtick runs, or the mention not broken:\n%s", body)
	}
}

// fakeEditor records the comments written through it.
type fakeEditor struct {
	bodies  map[string]string
	adds    int
	edits   int
	failing error
}

func (f *fakeEditor) AddComment(_ context.Context, _ platforms.Ref, body string) (string, error) {
	if f.failing != nil {
		return "", f.failing
	}
	f.adds++
	id := fmt.Sprint(f.adds)
	f.bodies[id] = body
	return id, nil
}

func (f *fakeEditor) EditComment(_ context.Context, _ platforms.Ref, id, body string) error {
	if f.failing != nil {
		return f.failing
	}
	if _, ok := f.bodies[id]; !ok {
		return fmt.Errorf("comment %s: %w", id, platforms.ErrNotFound)
	}
	f.edits++
	f.bodies[id] = body
	return nil
}

// TestProgressCommentIsOneCommentEditedAtMostOncePerInterval: the first
// line posts the comment at once; later lines edit it, never twice within
// the interval; a comment a person deleted is posted anew; a failed write
// is tried again on the next change; a run no longer ours writes nothing.
func TestProgressCommentIsOneCommentEditedAtMostOncePerInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress")
	now := time.Unix(1000, 0)
	ed := &fakeEditor{bodies: map[string]string{}}
	var fenceErr error
	c := &progressComment{ed: ed, path: path, every: 30 * time.Second, body: func(l string) string { return "P:" + l },
		fence: func(context.Context) error { return fenceErr }, clock: func() time.Time { return now }, log: zaptest.NewLogger(t)}
	appendLine := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, s)
		f.Close()
	}
	ctx := t.Context()
	c.update(ctx)
	if ed.adds != 0 {
		t.Fatal("posted with no line")
	}
	appendLine("cloning")
	c.update(ctx)
	if ed.adds != 1 || ed.bodies["1"] != "P:cloning" {
		t.Fatalf("first line: adds %d, bodies %v", ed.adds, ed.bodies)
	}
	appendLine("testing")
	now = now.Add(29 * time.Second)
	c.update(ctx)
	if ed.edits != 0 {
		t.Fatal("edited within the interval")
	}
	now = now.Add(time.Second)
	c.update(ctx)
	if ed.adds != 1 || ed.edits != 1 || ed.bodies["1"] != "P:cloning\ntesting" {
		t.Fatalf("after the interval: adds %d, edits %d, bodies %v", ed.adds, ed.edits, ed.bodies)
	}
	now = now.Add(time.Minute)
	c.update(ctx)
	if ed.edits != 1 {
		t.Fatal("edited with nothing new")
	}
	delete(ed.bodies, "1") // a person deleted it
	appendLine("pushing")
	c.update(ctx)
	if ed.adds != 2 || ed.bodies["2"] != "P:cloning\ntesting\npushing" {
		t.Fatalf("after deletion: adds %d, bodies %v", ed.adds, ed.bodies)
	}
	ed.failing = errors.New("502")
	appendLine("done")
	now = now.Add(time.Minute)
	c.update(ctx)
	ed.failing = nil
	now = now.Add(time.Minute)
	c.update(ctx)
	if !strings.HasSuffix(ed.bodies["2"], "done") {
		t.Fatalf("a failed write was not tried again: %v", ed.bodies)
	}
	fenceErr = errLostRun
	appendLine("after the run was lost")
	now = now.Add(time.Minute)
	tries := ed.adds + ed.edits
	c.update(ctx)
	if ed.adds+ed.edits != tries {
		t.Fatal("wrote for a run no longer ours")
	}
}
