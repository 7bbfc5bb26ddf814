package azuredevops

import "testing"

func TestCheckRepo(t *testing.T) {
	for _, ok := range []string{"contoso/Shop Front", "DefaultCollection/Web", "a/b", "my-org/proj.v2", "o/日本語"} {
		if err := CheckRepo(ok); err != nil {
			t.Errorf("CheckRepo(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "org", "org/", "/proj", "org/a/b", "-org/p", "org-/p", "o_rg/p", "org/_p", "org/.p", "org/p.", "org/p#1", "org/ p", "org/p;q"} {
		if err := CheckRepo(bad); err == nil {
			t.Errorf("CheckRepo(%q) accepted", bad)
		}
	}
}
