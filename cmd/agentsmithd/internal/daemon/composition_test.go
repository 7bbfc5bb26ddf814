package daemon

import (
	"go/ast"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/astguard"
)

// The composition root builds services; it derives no per-project setting.
// Those are on lifecycle.Project (built by internal/projects from config),
// where every service reads them, so a new per-project setting touches
// config and one lifecycle type. This fails when the daemon starts reading
// a project's polling, readiness, stuck, priority, limits or pipeline
// config again.
func TestDaemonDerivesNoPerProjectSetting(t *testing.T) {
	derived := map[string]bool{"Polling": true, "Readiness": true, "Stuck": true, "Priority": true,
		"Pipeline": true, "TokenConcurrency": true, "Commands": true, "Trigger": true}
	astguard.Walk(t, ".", astguard.Options{Shallow: true}, func(f *astguard.File) {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && derived[sel.Sel.Name] {
				t.Errorf("%s: reads a project's %s; put the setting on lifecycle.Project (internal/projects.Lifecycle) and read it in the service",
					f.At(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	})
}
