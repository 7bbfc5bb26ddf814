package trackerhttp

import (
	"net/url"
	"testing"
)

func TestSameResource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		// A renamed repository: the same issue under the repository's id.
		{"https://api.github.com/repos/octo/old/issues/72", "https://api.github.com/repositories/42/issues/72", true},
		{"https://api.github.com/repos/octo/old/issues/72/labels", "https://api.github.com/repositories/42/issues/72/labels", true},
		{"https://ghe.example/api/v3/repos/octo/old/issues/72", "https://ghe.example/api/v3/repos/octo/new/issues/72", true},
		// A transferred issue: another number, another sub-resource, another host.
		{"https://api.github.com/repos/octo/repo/issues/72", "https://api.github.com/repositories/43/issues/220", false},
		{"https://api.github.com/repos/octo/repo/issues/72/labels", "https://api.github.com/repositories/43/issues/220/labels", false},
		{"https://api.github.com/repos/octo/repo/issues/72", "https://api.github.com/repos/octo/repo/issues/72/comments", false},
		{"https://api.github.com/repos/octo/repo/issues/72", "https://evil.example/repos/octo/repo/issues/72", false},
		{"https://api.github.com/repos/octo/repo/issues/72", "http://api.github.com/repos/octo/repo/issues/72", false},
		{"https://api.github.com/repos/octo/repo/issues?page=2", "https://api.github.com/repositories/42/issues?page=3", false},
		// No repository part: only the very same path.
		{"https://jira.example/rest/api/2/issue/OPS-1", "https://jira.example/rest/api/2/issue/NEW-7", false},
		{"https://api.github.com/github/repos/octo/repo/issues/1", "https://api.github.com/other/repositories/42/issues/1", false},
	} {
		from, _ := url.Parse(c.from)
		to, _ := url.Parse(c.to)
		if got := sameResource(from, to); got != c.want {
			t.Errorf("sameResource(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
