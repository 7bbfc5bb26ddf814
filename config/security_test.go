package config

import (
	"strings"
	"testing"
)

// A project name is a directory under consumer.work_dir: "." and ".." would
// put working directories outside it.
func TestProjectNameIsASafePathSegment(t *testing.T) {
	base := oneProject + "    token_env: T\n"
	vars := map[string]string{"T": "t"}
	for _, name := range []string{"..", ".", "...", "a/b", `"a\u0000"`, `"a\nb"`} {
		got := parseErrs(t, strings.Replace(base, "name: p", "name: "+name, 1), vars)
		if len(got) != 1 || !strings.HasPrefix(got[0], "projects[0].name: must") {
			t.Errorf("name %s: %q", name, got)
		}
	}
	for _, name := range []string{"app", "a.b", "..app", "app-2_x"} {
		if _, err := Parse([]byte(strings.Replace(base, "name: p", "name: "+name, 1)), env(vars)); err != nil {
			t.Errorf("name %s refused: %v", name, err)
		}
	}
}
