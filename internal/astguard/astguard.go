// Package astguard walks and parses a tree of Go files for the guard
// tests: the tests that keep a rule of the codebase (time.Now only through
// wallclock, label literals only through lifecycle, no switch on platform
// names outside the registry, …) by reading the code itself. Each guard
// keeps its own rule and its own exceptions; the walk, the parse and the
// "path:line" of a finding are here, so every guard skips the same trees
// and reports in the same form.
package astguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the first line of the main module's go.mod; the bench and
// helm modules have go.mod files of their own.
const module = "module github.com/agentsmithd/agentsmithd\n"

// ModuleRoot is the directory holding the main module's go.mod, found from
// the working directory upwards; it fails t when there is none.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), module) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("astguard: the main module's go.mod is not above the working directory")
		}
		dir = parent
	}
}

// Files says which Go files a walk parses.
type Files int

const (
	// Production files: every .go file but the _test.go ones.
	Production Files = iota
	// Tests: the _test.go files alone.
	Tests
	// All Go files.
	All
)

// Options are a walk's skip rules. Below the root a walk never enters a
// directory whose name starts with "." or is "testdata": neither holds
// code the build compiles.
type Options struct {
	// Files selects production files, tests or both.
	Files Files
	// Skip lists directories, as slash paths from the root ("cmd/chaos"),
	// that the walk does not enter.
	Skip []string
	// SkipNames lists directory names ("trackersim") the walk enters
	// nowhere in the tree.
	SkipNames []string
	// SkipModules leaves out directories holding a go.mod of their own
	// (bench, deploy/helm): other modules.
	SkipModules bool
	// Shallow parses the root's own files and enters no directory.
	Shallow bool
	// Mode adds to the parser's mode (parser.ParseComments for a guard on
	// comments); objects are never resolved.
	Mode parser.Mode
}

// File is one parsed file of a walk.
type File struct {
	// Rel is the file's slash path from the walk's root.
	Rel string
	// Path is the file's path as walked (the root joined with Rel).
	Path string
	// Src is the file's text.
	Src  []byte
	AST  *ast.File
	Fset *token.FileSet
}

// At is "rel:line" of pos, the form every guard reports a finding in.
func (f *File) At(pos token.Pos) string {
	return f.Rel + ":" + strconv.Itoa(f.Fset.Position(pos).Line)
}

// Text is the source text of n.
func (f *File) Text(n ast.Node) string {
	return string(f.Src[f.Fset.Position(n.Pos()).Offset:f.Fset.Position(n.End()).Offset])
}

// Imports maps the import paths of f to the names they are used by in it:
// the explicit name, or the path's last element.
func (f *File) Imports() map[string]string {
	out := map[string]string{}
	for _, imp := range f.AST.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[p] = name
	}
	return out
}

// Walk parses the Go files under root that opts selects, in lexical
// order, and calls visit with each; a file that does not parse or a
// directory that cannot be read fails t. It returns how many files it
// parsed, so a guard can tell a walk that saw nothing from a clean tree.
func Walk(t testing.TB, root string, opts Options, visit func(*File)) int {
	t.Helper()
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && skipDir(path, rel, d.Name(), opts) {
				return filepath.SkipDir
			}
			return nil
		}
		if !selected(d.Name(), opts.Files) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, opts.Mode|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		n++
		visit(&File{Rel: rel, Path: path, Src: src, AST: f, Fset: fset})
		return nil
	})
	if err != nil {
		t.Fatalf("astguard: walk %s: %v", root, err)
	}
	return n
}

func skipDir(path, rel, name string, opts Options) bool {
	if opts.Shallow || strings.HasPrefix(name, ".") || name == "testdata" ||
		slices.Contains(opts.Skip, rel) || slices.Contains(opts.SkipNames, name) {
		return true
	}
	if opts.SkipModules {
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

func selected(name string, files Files) bool {
	if !strings.HasSuffix(name, ".go") {
		return false
	}
	test := strings.HasSuffix(name, "_test.go")
	switch files {
	case Production:
		return !test
	case Tests:
		return test
	}
	return true
}

// StringLit is the value of e when e is a string literal.
func StringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// WriteTree writes files (slash path from dir → content) under dir, for a
// guard's test of its own check.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Selector splits n, when it is x.Name with x an identifier (a package's
// name, mostly), into x and Name.
func Selector(n ast.Node) (x, name string, ok bool) {
	sel, isSel := n.(*ast.SelectorExpr)
	if !isSel {
		return "", "", false
	}
	id, isIdent := sel.X.(*ast.Ident)
	if !isIdent {
		return "", "", false
	}
	return id.Name, sel.Sel.Name, true
}

// Literals lists, as "rel:line: literal", the string literals of f whose
// value match accepts.
func (f *File) Literals(match func(string) bool) []string {
	var out []string
	ast.Inspect(f.AST, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok {
			if v, ok := StringLit(lit); ok && match(v) {
				out = append(out, f.At(lit.Pos())+": "+lit.Value)
			}
		}
		return true
	})
	return out
}

// Finds is a guard's test of its own check: it writes files (slash path
// from the root → content) into a new directory, runs check over it and
// fails t unless check reports want, in order. A check that sees nothing
// would pass every tree; this shows it sees what it exists for.
func Finds(t *testing.T, check func(t *testing.T, root string) []string, files map[string]string, want ...string) {
	t.Helper()
	root := t.TempDir()
	WriteTree(t, root, files)
	if got := check(t, root); !slices.Equal(got, want) {
		t.Fatalf("found\n%q\nwant\n%q", got, want)
	}
}
