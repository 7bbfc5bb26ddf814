package lifecycle

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/readme"
)

// The state diagram in docs/architecture.md draws exactly the moves the
// Transitions table allows: an edge added to one and not the other fails.
func TestArchitectureDiagramDrawsTheTransitionTable(t *testing.T) {
	md, err := readme.LoadDoc("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var diagram string
	for _, b := range readme.Blocks(md) {
		if b.Lang == "mermaid" && strings.Contains(b.Text, "stateDiagram") {
			diagram = b.Text
			break
		}
	}
	if diagram == "" {
		t.Fatal("docs/architecture.md has no mermaid stateDiagram block")
	}
	name := func(s State) string { return strings.ReplaceAll(s.String(), "-", "") }
	want := map[string]bool{}
	for _, tr := range Transitions {
		want[name(tr.From)+" --> "+name(tr.To)] = true
	}
	got := map[string]bool{}
	edge := regexp.MustCompile(`^\s*(\w+) --> (\w+)`)
	for _, line := range strings.Split(diagram, "\n") {
		if m := edge.FindStringSubmatch(line); m != nil {
			got[strings.ToLower(m[1])+" --> "+strings.ToLower(m[2])] = true
		}
	}
	for e := range want {
		if !got[e] {
			t.Errorf("the diagram lacks the transition %s", e)
		}
	}
	for e := range got {
		if !want[e] {
			t.Errorf("the diagram draws %s, which Transitions does not allow", e)
		}
	}
}
