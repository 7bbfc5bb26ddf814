package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks Parse never panics and that its errors never contain a
// resolved secret, whatever the document.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(testdata + "*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a]\nprojects: [*b, *b]\n"))
	f.Add([]byte("projects:\n  - <<: [{name: x}, *y]\n"))
	f.Add([]byte("projects:\n  - pipeline: {retry: {exit_codes: [a, {b: 1}, 1e3], backoff: {jitter: [1], multiplier: .nan}}}\n    priority: {labels: {x: y, z: [1]}, default: -1}\n"))
	const secret = "fuzz-s3cret-value"
	lookup := func(string) (string, bool) { return secret, true }
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, lookup)
		if err != nil {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("secret in error: %v", err)
			}
			return
		}
		if len(c.Projects) == 0 {
			t.Fatal("valid config without projects")
		}
	})
}
