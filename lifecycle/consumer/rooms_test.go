package consumer

import (
	"go/ast"
	"sort"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
)

// One run's path is Executor.handle and everything it calls: it must read
// in few files of its own package, so a reader follows a run without
// crossing the package. maxRunPathFiles is the ceiling, today's count: the
// path measured the same way over the whole lifecycle package, when the
// consumer was part of it, entered 29 files.
const maxRunPathFiles = 5

// runPathDir is the package the run's path is measured in: this one.
const runPathDir = "."

func TestRunPathReadsInFewFiles(t *testing.T) {
	files := runPathFiles(t, runPathDir, "Executor", "handle")
	t.Logf("Executor.handle enters %d files: %s", len(files), strings.Join(files, " "))
	if len(files) > maxRunPathFiles {
		t.Errorf("Executor.handle enters %d files, more than %d: keep one run's path in the files it has (%s)",
			len(files), maxRunPathFiles, strings.Join(files, " "))
	}
}

// runPathFiles returns the files (base names, sorted) holding the static
// call closure of the method recv.name inside the package in dir: every
// function and method called by name from it, transitively, within that
// package. Without type information a call x.m() is taken to reach every
// method m of the package, whatever its receiver, which errs toward more
// files; a call through an imported package's name reaches none.
func runPathFiles(t *testing.T, dir, recv, name string) []string {
	t.Helper()
	type decl struct {
		fn      *ast.FuncDecl
		file    string
		imports map[string]bool
	}
	byName := map[string][]decl{} // "f" for a function, ".m" for a method
	var root *decl
	astguard.Walk(t, dir, astguard.Options{Shallow: true}, func(f *astguard.File) {
		imports := map[string]bool{}
		for _, local := range f.Imports() {
			imports[local] = true
		}
		for _, d := range f.AST.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil {
				key = "." + key
				if fd.Name.Name == name && receiverName(fd) == recv {
					root = &decl{fd, f.Rel, imports}
				}
			}
			byName[key] = append(byName[key], decl{fd, f.Rel, imports})
		}
	})
	if root == nil {
		t.Fatalf("no method %s.%s in %s", recv, name, dir)
	}
	seen := map[*ast.FuncDecl]bool{root.fn: true}
	files := map[string]bool{root.file: true}
	queue := []decl{*root}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		ast.Inspect(d.fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fun := call.Fun
			if ix, ok := fun.(*ast.IndexExpr); ok { // a generic function instantiated
				fun = ix.X
			}
			var key string
			switch f := fun.(type) {
			case *ast.Ident:
				key = f.Name
			case *ast.SelectorExpr:
				if pkg, ok := f.X.(*ast.Ident); ok && d.imports[pkg.Name] {
					return true // another package's
				}
				key = "." + f.Sel.Name
			}
			for _, c := range byName[key] {
				if !seen[c.fn] {
					seen[c.fn] = true
					files[c.file] = true
					queue = append(queue, c)
				}
			}
			return true
		})
	}
	var out []string
	for f := range files {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// receiverName is the name of fd's receiver type, without pointer or type
// parameters.
func receiverName(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
