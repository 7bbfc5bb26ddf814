package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGitHubApp(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, []byte(pemKey), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"APP_KEY": pemKey, "T": "t"}

	c := mustParse(t, oneProject+"    github_app: {app_id: 12, installation_id: 34, private_key_file: "+keyFile+"}\n", vars)
	a := c.Projects[0].GitHubApp
	if a.AppID != 12 || a.InstallationID != 34 || a.PrivateKey.Value() != strings.TrimSpace(pemKey) || c.Projects[0].Token.IsSet() {
		t.Errorf("github_app = %+v", a)
	}
	c = mustParse(t, oneProject+"    github_app: {app_id: 12, installation_id: 34, private_key_env: APP_KEY}\n", vars)
	if !c.Projects[0].GitHubApp.IsSet() {
		t.Error("private_key_env not read")
	}

	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	vars["EC_KEY"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))
	vars["NOT_PEM"] = "s3cret-not-pem"
	for yml, want := range map[string][]string{
		"    github_app: {installation_id: 34, private_key_env: APP_KEY}\n": {
			"projects[0].github_app.app_id: required: the App ID from the app's settings page"},
		"    github_app: {app_id: 12, private_key_env: APP_KEY}\n": {
			"projects[0].github_app.installation_id: required: the installation's id (the number in its settings URL)"},
		"    github_app: {app_id: 12, installation_id: 34}\n": {
			"projects[0].github_app.private_key: required: private_key_file (the .pem GitHub generated) or private_key_env"},
		"    token_env: T\n    github_app: {app_id: 12, installation_id: 34, private_key_env: APP_KEY}\n": {
			"projects[0].token: set either token or github_app, not both"},
		"    github_app: {app_id: 12, installation_id: 34, private_key_env: NOT_PEM}\n": {
			"projects[0].github_app.private_key: not a PEM-encoded private key"},
		"    github_app: {app_id: 12, installation_id: 34, private_key_env: EC_KEY}\n": {
			"projects[0].github_app.private_key: not an RSA private key (GitHub App keys are RSA)"},
	} {
		got := parseErrs(t, oneProject+yml, vars)
		if !slices.Equal(got, want) {
			t.Errorf("%q\n got %q\nwant %q", yml, got, want)
		}
		for _, e := range got {
			if strings.Contains(e, "s3cret") || strings.Contains(e, "PRIVATE KEY") {
				t.Errorf("error quotes the key: %q", e)
			}
		}
	}
	gitlab := strings.Replace(oneProject, "platform: github", "platform: gitlab", 1)
	gitlab = strings.Replace(gitlab, "repo: o/r", "repo: g/p", 1)
	got := parseErrs(t, gitlab+"    token_env: T\n    github_app: {app_id: 1, installation_id: 2, private_key_env: APP_KEY}\n", vars)
	if !slices.Equal(got, []string{"projects[0].github_app: only for platform github"}) {
		t.Errorf("gitlab with github_app: %q", got)
	}
}
