package readme

import (
	"go/parser"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
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
	astguard.Walk(t, root, astguard.Options{Mode: parser.ParseComments}, func(f *astguard.File) {
		for _, g := range f.AST.Comments {
			text := strings.ToLower(strings.Join(strings.Fields(g.Text()), " "))
			for _, p := range historyPhrases {
				if strings.Contains(text, p) {
					found = append(found, f.At(g.Pos())+": "+p)
				}
			}
		}
	})
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
	astguard.Finds(t, historyInComments, map[string]string{
		"a/story.go":      "package a\n\n// Before the fix the run\n// waited out its timeout.\nvar X = 1\n",
		"a/fine.go":       "package a\n\n// Y is what the run waits for, and why.\nvar Y = 1\n",
		"a/story_test.go": "package a\n\n// as before\nvar Z = 1\n",
	}, "a/story.go:3: before the fix")
}
