// Package pipelines holds the example pipelines (one directory each, with
// its README) and embeds the offline one, so `agentsmithd demo` runs the very
// script this directory ships, wherever the binary was built.
package pipelines

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed lib/workspace.sh offline/run.sh
var offline embed.FS

// InstallOffline writes the offline pipeline and the library it sources
// under dir, keeping their layout, and returns the path of its run.sh.
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
