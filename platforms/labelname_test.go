package platforms_test

import (
	"go/ast"
	"go/token"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestSameLabelFollowsEachPlatform(t *testing.T) {
	for _, c := range []struct {
		platform string
		a, b     string
		want     bool
	}{
		{"github", "Agent-Smith", "agent-smith", true},
		{"github", "agent-smith:enqueued", "Agent-Smith:Enqueued", true},
		{"azuredevops", "Agent-Smith:Done", "agent-smith:done", true},
		{"gitlab", "Agent-Smith", "agent-smith", false},
		{"jira", "Agent-Smith", "agent-smith", false},
		{"", "Agent-Smith", "agent-smith", false},
		{"github", "agent-smith", "agent-smith-x", false},
	} {
		if got := platforms.SameLabel(c.platform, c.a, c.b); got != c.want {
			t.Errorf("SameLabel(%q, %q, %q) = %v, want %v", c.platform, c.a, c.b, got, c.want)
		}
	}
	// A trigger label configured as "Agent-Smith" is on a GitHub ticket
	// labelled "agent-smith".
	tk := &platforms.Ticket{Ref: platforms.Ref{Platform: "github"}, Labels: []string{"bug", "agent-smith"}}
	if !tk.HasLabel("Agent-Smith") {
		t.Error(`a GitHub ticket labelled "agent-smith" does not have "Agent-Smith"`)
	}
	tk.Ref.Platform = "gitlab"
	if tk.HasLabel("Agent-Smith") {
		t.Error(`a GitLab ticket labelled "agent-smith" has "Agent-Smith"`)
	}
	if !platforms.HasLabelPrefix("github", "Agent-Smith:Done", "agent-smith:") || platforms.HasLabelPrefix("gitlab", "Agent-Smith:Done", "agent-smith:") {
		t.Error("HasLabelPrefix does not follow the platform's case rule")
	}
	got := platforms.Respell("github", []string{"Bug", "Agent-Smith:Done"}, []string{"agent-smith:done"})
	if want := []string{"Bug", "agent-smith:done"}; !equal(got, want) {
		t.Errorf("Respell = %q, want %q", got, want)
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// labelish matches an expression that names a label or a tag.
var labelish = regexp.MustCompile(`(?i)label|tag`)

// Whether two label names are the same label is platforms.SameLabel's to
// say (labelname.go): a comparison of label names anywhere else in the
// daemon's code (==, !=, strings.EqualFold, slices.Contains or
// slices.Index of something named label or tag) would answer for one
// platform what only the platform decides. trackersim models the platforms
// themselves and is not walked; tests are exempt.
func TestLabelComparisonsHaveOneOwner(t *testing.T) {
	violations := labelComparisons(t, []string{".", "../lifecycle", "../housekeeping", "../internal", "../cmd"})
	for _, v := range violations {
		t.Errorf("label names compared outside platforms.SameLabel: %s", v)
	}
}

// The check finds each kind of comparison it forbids.
func TestLabelComparisonCheckFindsViolations(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import ("slices"; "strings")

func f(label, add string, labels []string) bool {
	return label == add || strings.EqualFold(label, add) || slices.Contains(labels, add) || slices.Index(labels, add) > 0
}
`
	astguard.WriteTree(t, dir, map[string]string{"x.go": src})
	if got := labelComparisons(t, []string{dir}); len(got) != 4 {
		t.Errorf("found %d violations, want 4: %q", len(got), got)
	}
}

func labelComparisons(t *testing.T, roots []string) []string {
	t.Helper()
	var out []string
	opts := astguard.Options{SkipNames: []string{"sim", "trackertest"}}
	for _, root := range roots {
		astguard.Walk(t, root, opts, func(f *astguard.File) {
			if path.Base(f.Rel) == "labelname.go" {
				return
			}
			text := func(e ast.Expr) string { return f.Text(e) }
			at := func(n ast.Node) string { return f.Fset.Position(n.Pos()).String() + ": " + f.Text(n) }
			ast.Inspect(f.AST, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BinaryExpr:
					if (n.Op == token.EQL || n.Op == token.NEQ) && comparesNames(n.X, n.Y, text) {
						out = append(out, at(n))
					}
				case *ast.CallExpr:
					pkg, name, ok := astguard.Selector(n.Fun)
					if !ok {
						return true
					}
					switch call := pkg + "." + name; {
					case call == "strings.EqualFold" && len(n.Args) == 2 && !isLit(n.Args[0]) && !isLit(n.Args[1]) && (labelish.MatchString(text(n.Args[0])) || labelish.MatchString(text(n.Args[1]))),
						(call == "slices.Contains" || call == "slices.Index") && len(n.Args) == 2 && labelish.MatchString(text(n.Args[0])):
						out = append(out, at(n))
					}
				}
				return true
			})
		})
	}
	return out
}

// comparesNames reports whether x == y compares two strings, one of them
// named as a label or tag: not a literal, not a length, not a nil check.
func comparesNames(x, y ast.Expr, text func(ast.Expr) string) bool {
	if strings.Contains(text(x)+text(y), "StateOf(") { // states, not names
		return false
	}
	for _, e := range []ast.Expr{x, y} {
		switch e := e.(type) {
		case *ast.BasicLit:
			return false
		case *ast.Ident:
			if e.Name == "nil" || e.Name == "true" || e.Name == "false" {
				return false
			}
		case *ast.CallExpr:
			if f, ok := e.Fun.(*ast.Ident); ok && f.Name == "len" {
				return false
			}
		}
	}
	return labelish.MatchString(text(x)) || labelish.MatchString(text(y))
}

func isLit(e ast.Expr) bool { _, ok := e.(*ast.BasicLit); return ok }
