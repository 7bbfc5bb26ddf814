// Package pipelines holds the example pipelines (one directory each, with
// its README) and embeds the offline ones (run.sh, and plan.sh and
// implement.sh for a staged project), so `agentsmithd demo` runs the very
// scripts this directory ships, wherever the binary was built.
package pipelines

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed lib/workspace.sh offline/*.sh
var offline embed.FS

// InstallOffline writes the offline pipelines and the library they source
// under dir, keeping their layout, and returns the path of its run.sh;
// plan.sh and implement.sh are beside it.
func InstallOffline(dir string) (string, error) {
	err := fs.WalkDir(offline, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := offline.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o755)
	})
	if err != nil {
		return "", fmt.Errorf("install the offline pipeline in %s: %w", dir, err)
	}
	return filepath.Join(dir, "offline", "run.sh"), nil
}
