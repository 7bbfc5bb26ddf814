package gitlab

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestCheckProject(t *testing.T) {
	for _, ok := range []string{"group/project", "group/sub/project", "a/b/c/d", "my-group/my.project_1"} {
		if err := CheckProject(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "project", "group/", "/project", "group//project", "group/pro ject ", "group/p#1", "group%2Fproject/x", "42"} {
		if err := CheckProject(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if d, _ := platforms.Lookup("gitlab"); d.DefaultBaseURL != "https://gitlab.com/api/v4/" {
		t.Errorf("gitlab default base URL = %q", d.DefaultBaseURL)
	}
}
