package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
)

// github.api chooses how a GitHub project writes labels: REST unless it
// says graphql; anything else, or the section on another platform, is
// refused.
func TestGitHubAPI(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	if c := mustParse(t, oneProject+"    token_env: T\n", vars); c.Projects[0].GitHub.API != "" {
		t.Errorf("default api = %q, want \"\" (REST)", c.Projects[0].GitHub.API)
	}
	for _, api := range []string{GitHubAPIREST, GitHubAPIGraphQL} {
		if c := mustParse(t, oneProject+"    token_env: T\n    github: {api: "+api+"}\n", vars); c.Projects[0].GitHub.API != api {
			t.Errorf("api %s read as %q", api, c.Projects[0].GitHub.API)
		}
	}
	if got := parseErrs(t, oneProject+"    token_env: T\n    github: {api: soap}\n", vars); !slices.Equal(got,
		[]string{`projects[0].github.api: want "graphql" (the default) or "rest"`}) {
		t.Errorf("api soap: %q", got)
	}
	gitlab := strings.Replace(strings.Replace(oneProject, "platform: github", "platform: gitlab", 1), "repo: o/r", "repo: g/p", 1)
	if got := parseErrs(t, gitlab+"    token_env: T\n    github: {api: graphql}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github: only for platform github"}) {
		t.Errorf("gitlab with github.api: %q", got)
	}
}

// github.pace_secondary is on for a GitHub project unless it says false,
// off on another platform, and refused there when set on; the printed
// config parses back either way.
func TestGitHubPaceSecondary(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	if c := mustParse(t, oneProject+"    token_env: T\n", vars); !c.Projects[0].GitHub.Paced() {
		t.Error("a GitHub project is not paced by default")
	}
	if c := mustParse(t, oneProject+"    token_env: T\n    github: {pace_secondary: false}\n", vars); c.Projects[0].GitHub.Paced() {
		t.Error("pace_secondary: false still paces")
	}
	gitlab := strings.Replace(strings.Replace(oneProject, "platform: github", "platform: gitlab", 1), "repo: o/r", "repo: g/p", 1)
	c := mustParse(t, gitlab+"    token_env: T\n", vars)
	if c.Projects[0].GitHub.Paced() {
		t.Error("a GitLab project is paced for GitHub's limits")
	}
	for _, yml := range []string{oneProject, gitlab} {
		c := mustParse(t, yml+"    token_env: T\n", vars)
		out, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back := mustParse(t, string(out), vars)
		if back.Projects[0].GitHub.Paced() != c.Projects[0].GitHub.Paced() {
			t.Errorf("printed config reads pace_secondary back as %v:\n%s", back.Projects[0].GitHub.Paced(), out)
		}
	}
	if got := parseErrs(t, gitlab+"    token_env: T\n    github: {pace_secondary: true}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github: only for platform github"}) {
		t.Errorf("gitlab with github.pace_secondary: %q", got)
	}
}

// github.pace_labels_as_content is off unless set, read when set on a
// paced GitHub project, and refused on another platform and with
// pace_secondary: false.
func TestGitHubPaceLabelsAsContent(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t"}
	if c := mustParse(t, oneProject+"    token_env: T\n", vars); c.Projects[0].GitHub.PaceLabelsAsContent {
		t.Error("label writes paced as content by default")
	}
	c := mustParse(t, oneProject+"    token_env: T\n    github: {pace_labels_as_content: true}\n", vars)
	if !c.Projects[0].GitHub.PaceLabelsAsContent || !c.Projects[0].GitHub.Paced() {
		t.Errorf("pace_labels_as_content: true read as %+v", c.Projects[0].GitHub)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if back := mustParse(t, string(out), vars); !back.Projects[0].GitHub.PaceLabelsAsContent {
		t.Errorf("printed config drops pace_labels_as_content:\n%s", out)
	}
	if got := parseErrs(t, oneProject+"    token_env: T\n    github: {pace_secondary: false, pace_labels_as_content: true}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github.pace_labels_as_content: needs pace_secondary: true (it says how writes are paced)"}) {
		t.Errorf("pace_labels_as_content without pacing: %q", got)
	}
	gitlab := strings.Replace(strings.Replace(oneProject, "platform: github", "platform: gitlab", 1), "repo: o/r", "repo: g/p", 1)
	if got := parseErrs(t, gitlab+"    token_env: T\n    github: {pace_labels_as_content: true}\n", vars); !slices.Equal(got,
		[]string{"projects[0].github: only for platform github"}) {
		t.Errorf("gitlab with github.pace_labels_as_content: %q", got)
	}
}

// Two GitHub projects that share a credential (a token by source or value,
// or an App installation, on one host) share its secondary-limit pace, so
// they must read it alike: a disagreement is refused, naming both. Other
// credentials, or another host, may read it their own way.
func TestGitHubPacingAgreesPerCredential(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"T": "t", "U": "u", "SAME": "t", "APP_KEY": testRSAKey(t)}
	two := func(a, b string) string {
		return "projects:\n" +
			"  - {name: a, platform: github, repo: o/a, polling: {enabled: true}, pipeline: {command: [run]}, " + a + "}\n" +
			"  - {name: b, platform: github, repo: o/b, polling: {enabled: true}, pipeline: {command: [run]}, " + b + "}\n"
	}
	for _, c := range []struct {
		name, a, b string
		want       []string
	}{
		{"same token env, labels as content", "token_env: T", "token_env: T, github: {pace_labels_as_content: true}",
			[]string{`projects[1].github.pace_labels_as_content: true, but project "a", which shares this project's credential, says false: the pace counts the credential's writes, so both must say the same`}},
		{"same token value, pace off", "token_env: T", "token_env: SAME, github: {pace_secondary: false}",
			[]string{`projects[1].github.pace_secondary: false, but project "a", which shares this project's credential, says true: the pace counts the credential's writes, so both must say the same`}},
		{"same installation", "github_app: {app_id: 1, installation_id: 2, private_key_env: APP_KEY}",
			"github_app: {app_id: 1, installation_id: 2, private_key_env: APP_KEY}, github: {pace_labels_as_content: true}",
			[]string{`projects[1].github.pace_labels_as_content: true, but project "a", which shares this project's credential, says false: the pace counts the credential's writes, so both must say the same`}},
		{"agreeing", "token_env: T, github: {pace_labels_as_content: true}", "token_env: T, github: {pace_labels_as_content: true}", nil},
		{"another token", "token_env: T", "token_env: U, github: {pace_labels_as_content: true}", nil},
		{"another installation", "github_app: {app_id: 1, installation_id: 2, private_key_env: APP_KEY}",
			"github_app: {app_id: 1, installation_id: 3, private_key_env: APP_KEY}, github: {pace_secondary: false}", nil},
		{"another host", "token_env: T", "token_env: T, base_url: \"https://ghe.example.com/api/v3/\", github: {pace_secondary: false}", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			yml := two(c.a, c.b)
			if c.want == nil {
				mustParse(t, yml, vars)
				return
			}
			if got := parseErrs(t, yml, vars); !slices.Equal(got, c.want) {
				t.Errorf("errors %q, want %q", got, c.want)
			}
		})
	}
}

// testRSAKey is a PEM RSA key, as an App's private_key holds.
func testRSAKey(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}
