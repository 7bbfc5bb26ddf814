package astguard_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
)

// tree is a module with one file of each kind a walk tells apart.
var tree = map[string]string{
	"a.go":                  "package a\n\n// A is a.\nvar A = \"x\"\n",
	"a_test.go":             "package a\nvar T = 1\n",
	"sub/b.go":              "package sub\nimport s \"strings\"\nvar B = s.ToUpper(\"b\")\n",
	"sub/deep/c.go":         "package deep\nvar C = 3\n",
	"skipped/d.go":          "package skipped\n",
	"x/trackersim/e.go":     "package trackersim\n",
	"other/go.mod":          "module other\n",
	"other/f.go":            "package other\n",
	"testdata/g.go":         "not go at all",
	".hidden/h.go":          "not go at all",
	"sub/deep/notes.txt":    "not go",
	"sub/testdata/bad.go":   "not go either",
	"sub/deep/c_test.go":    "package deep\n",
	"sub/.cache/cached.go":  "not go",
	"skippednot/ok.go":      "package skippednot\n",
	"x/trackersimx/keep.go": "package trackersimx\n",
}

func walk(t *testing.T, root string, opts astguard.Options) []string {
	t.Helper()
	var got []string
	n := astguard.Walk(t, root, opts, func(f *astguard.File) { got = append(got, f.Rel) })
	if n != len(got) {
		t.Errorf("Walk returned %d, visited %d", n, len(got))
	}
	return got
}

func TestWalkSelectsAndSkips(t *testing.T) {
	root := t.TempDir()
	astguard.WriteTree(t, root, tree)
	for _, c := range []struct {
		name string
		opts astguard.Options
		want []string
	}{
		{"production", astguard.Options{},
			[]string{"a.go", "other/f.go", "skipped/d.go", "skippednot/ok.go", "sub/b.go", "sub/deep/c.go", "x/trackersim/e.go", "x/trackersimx/keep.go"}},
		{"tests", astguard.Options{Files: astguard.Tests}, []string{"a_test.go", "sub/deep/c_test.go"}},
		{"skip rules", astguard.Options{Files: astguard.All, Skip: []string{"skipped", "sub/deep"}, SkipNames: []string{"trackersim"}, SkipModules: true},
			[]string{"a.go", "a_test.go", "skippednot/ok.go", "sub/b.go", "x/trackersimx/keep.go"}},
		{"shallow", astguard.Options{Files: astguard.All, Shallow: true}, []string{"a.go", "a_test.go"}},
	} {
		if got := walk(t, root, c.opts); !slices.Equal(got, c.want) {
			t.Errorf("%s: walked\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}

func TestFileReportsWhereAndWhat(t *testing.T) {
	root := t.TempDir()
	astguard.WriteTree(t, root, tree)
	var at, text, imported, sel []string
	var comments int
	astguard.Walk(t, root, astguard.Options{Skip: []string{"other", "skipped", "skippednot", "x"}, Mode: parser.ParseComments}, func(f *astguard.File) {
		if f.Path != filepath.Join(root, filepath.FromSlash(f.Rel)) {
			t.Errorf("Path %s, Rel %s", f.Path, f.Rel)
		}
		comments += len(f.AST.Comments)
		for p, name := range f.Imports() {
			imported = append(imported, p+"="+name)
		}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok {
				if v, ok := astguard.StringLit(e); ok {
					at = append(at, f.At(n.Pos())+": "+v)
					text = append(text, f.Text(n))
				}
			}
			if x, name, ok := astguard.Selector(n); ok {
				sel = append(sel, x+"."+name)
			}
			return true
		})
	})
	if want := []string{"a.go:4: x", "sub/b.go:2: strings", "sub/b.go:3: b"}; !slices.Equal(at, want) {
		t.Errorf("At: %q, want %q", at, want)
	}
	if want := []string{`"x"`, `"strings"`, `"b"`}; !slices.Equal(text, want) {
		t.Errorf("Text: %q, want %q", text, want)
	}
	if want := []string{"strings=s"}; !slices.Equal(imported, want) {
		t.Errorf("Imports: %q, want %q", imported, want)
	}
	if want := []string{"s.ToUpper"}; !slices.Equal(sel, want) {
		t.Errorf("Selector: %q, want %q", sel, want)
	}
	if comments != 1 {
		t.Errorf("%d comment groups with parser.ParseComments, want 1", comments)
	}
}

// A file that does not parse fails the guard rather than hiding its
// findings.
func TestWalkFailsOnAFileThatDoesNotParse(t *testing.T) {
	root := t.TempDir()
	astguard.WriteTree(t, root, map[string]string{"bad.go": "package"})
	ft := &fatalT{TB: t}
	func() {
		defer func() { _ = recover() }()
		astguard.Walk(ft, root, astguard.Options{}, func(*astguard.File) {})
	}()
	if !strings.Contains(ft.msg, "bad.go") {
		t.Errorf("Walk over an unparsable file: fatal %q, want one naming bad.go", ft.msg)
	}
}

type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
	panic("fatal")
}

func TestModuleRootHoldsTheMainGoMod(t *testing.T) {
	root := astguard.ModuleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(b), "module github.com/agentsmithd/agentsmithd\n") {
		t.Fatalf("ModuleRoot %s: go.mod %q, %v", root, b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "astguard", "astguard.go")); err != nil {
		t.Fatalf("ModuleRoot %s does not hold this package: %v", root, err)
	}
}

func TestLiteralsAndFinds(t *testing.T) {
	check := func(t *testing.T, root string) []string {
		var out []string
		astguard.Walk(t, root, astguard.Options{}, func(f *astguard.File) {
			out = append(out, f.Literals(func(v string) bool { return strings.HasPrefix(v, "x") })...)
		})
		return out
	}
	astguard.Finds(t, check, map[string]string{
		"a.go":      "package a\nvar a = []string{\"xa\", \"y\"}\nvar b = `xb`\n",
		"a_test.go": "package a\nvar c = \"xc\"\n",
	}, `a.go:2: "xa"`, "a.go:3: `xb`")
}
