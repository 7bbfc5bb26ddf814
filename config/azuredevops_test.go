package config

import "testing"

func TestCheckAzureDevOpsRepo(t *testing.T) {
	for _, ok := range []string{"contoso/Shop Front", "DefaultCollection/Web", "a/b", "my-org/proj.v2", "o/日本語"} {
		if err := checkAzureDevOpsRepo(ok); err != nil {
			t.Errorf("checkAzureDevOpsRepo(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "org", "org/", "/proj", "org/a/b", "-org/p", "org-/p", "o_rg/p", "org/_p", "org/.p", "org/p.", "org/p#1", "org/ p", "org/p;q"} {
		if err := checkAzureDevOpsRepo(bad); err == nil {
			t.Errorf("checkAzureDevOpsRepo(%q) accepted", bad)
		}
	}
}
