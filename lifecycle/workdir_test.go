package lifecycle

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestWorkDirStaysUnderRoot(t *testing.T) {
	root := "/var/lib/agentsmithd/work"
	for _, ref := range []platforms.Ref{
		{Platform: "github", Project: "..", ID: "acme/app#1"},
		{Platform: "github", Project: ".", ID: "x"},
		{Platform: "..", Project: "app", ID: ""},
		{Platform: "github", Project: "../../etc", ID: "../../x"},
	} {
		d := WorkDir(root, ref)
		if rel, err := filepath.Rel(root, d); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || strings.Count(rel, string(filepath.Separator)) != 1 {
			t.Errorf("WorkDir(%+v) = %s, outside %s or not two levels below it", ref, d, root)
		}
	}
}
