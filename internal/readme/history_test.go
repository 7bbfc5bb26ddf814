package readme

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// historyPhrases tell the story of a change rather than what the code is.
// That story belongs in the commit body, where it stays true; in a comment
// it goes stale with the next change.
var historyPhrases = []string{"before the fix", "after the fix", "without the fix", "as before"}

// historyInComments lists each production comment under root that carries
// a history phrase, as "path:line: phrase".
func historyInComments(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, g := range f.Comments {
			text := strings.ToLower(strings.Join(strings.Fields(g.Text()), " "))
			for _, p := range historyPhrases {
				if strings.Contains(text, p) {
					found = append(found, filepath.ToSlash(rel)+":"+strconv.Itoa(fset.Position(g.Pos()).Line)+": "+p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestCommentsStateWhatIsNotHistory(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if found := historyInComments(t, root); len(found) > 0 {
		t.Errorf("comments that tell a change's history (say what is and why; the story goes in the commit body):\n%s", strings.Join(found, "\n"))
	}
}

func TestHistoryGuardFindsAPhrase(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a/story.go":      "package a\n\n// Before the fix the run\n// waited out its timeout.\nvar X = 1\n",
		"a/fine.go":       "package a\n\n// Y is what the run waits for, and why.\nvar Y = 1\n",
		"a/story_test.go": "package a\n\n// as before\nvar Z = 1\n",
	}
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := historyInComments(t, dir)
	if len(got) != 1 || got[0] != "a/story.go:3: before the fix" {
		t.Fatalf("found %q, want the one phrase in a/story.go", got)
	}
}
