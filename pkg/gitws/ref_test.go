package gitws

import (
	"os/exec"
	"strings"
	"testing"
)

// Ticket ids are hostile: whatever they hold, the branch name passes git's
// own check-ref-format, and CheckRefFormat agrees with git on each case.
func TestBranchNameAgreesWithGit(t *testing.T) {
	t.Parallel()
	ids := []string{"12", "owner/repo#12", "PROJ-7", "../../etc", "a..b", "x.lock", "@{-1}", "@", "-rf", "a b\tc",
		"~^:?*[\\", ".hidden", "é", "\x00\x7f", strings.Repeat("x", 500), "", "..", "refs/heads/main", "a/.b/c.lock"}
	for _, id := range ids {
		name, err := BranchName(DefaultBranch, id)
		if err != nil {
			t.Errorf("BranchName(%q): %v", id, err)
			continue
		}
		if !gitAccepts(t, name) {
			t.Errorf("BranchName(%q) = %q, which git refuses", id, name)
		}
		if !strings.HasPrefix(name, "agent-smith/") || strings.Count(name, "/") != 1 {
			t.Errorf("BranchName(%q) = %q: the id added a path component", id, name)
		}
	}
	names := []string{"agent-smith/1", "a/b", "a..b", "a/.b", "a.lock", "a/b.lock/c", "a//b", "/a", "a/", "a.", "a@{b",
		"a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b", "-a", "a\x01b", "a@b", "x/y-z_1.2"}
	for _, n := range names {
		if got, want := CheckRefFormat(n) == nil, gitAccepts(t, n); got != want {
			t.Errorf("CheckRefFormat(%q) accepts=%v, git accepts=%v", n, got, want)
		}
	}
	// git check-ref-format --branch reads "@" as HEAD; as a branch it is
	// refused (refs/heads/@), and so is it here.
	if CheckRefFormat("@") == nil {
		t.Error(`CheckRefFormat accepted "@"`)
	}
}

func gitAccepts(t *testing.T, name string) bool {
	t.Helper()
	err := exec.Command("git", "check-ref-format", "--branch", name).Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("git check-ref-format: %v", err)
		}
	}
	return err == nil
}
