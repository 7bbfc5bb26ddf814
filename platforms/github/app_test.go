package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	appID          = 4242
	installationID = 77
)

// newAppKey returns an RSA key and its PEM encoding, as GitHub hands out.
func newAppKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// appSim accepts no static token: only installation tokens it issued.
func appSim(t *testing.T, key *rsa.PrivateKey) (*trackersim.Sim, string) {
	t.Helper()
	s := trackersim.New(trackersim.Options{Tokens: []string{"only-app-tokens-get-in"},
		Apps: []trackersim.App{{ID: appID, PublicKey: &key.PublicKey, Installations: []int64{installationID}}}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func TestAppInstallationTokenLabelsTicket(t *testing.T) {
	key, pemKey := newAppKey(t)
	s, url := appSim(t, key)
	n := s.CreateIssue("acme/app", "app auth", "", "agent-smith")
	tr, err := github.New(github.Options{BaseURL: url + "/github/", Repo: "acme/app", Project: "app", Writer: "app-test",
		App: &github.App{AppID: appID, InstallationID: installationID, PrivateKey: pemKey}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := platforms.Ref{Platform: github.Platform, Project: "app", ID: github.FormatID("acme/app", n)}
	tk, err := tr.Get(ctx, ref)
	if err != nil {
		t.Fatalf("Get with an installation token: %v", err)
	}
	if _, err := tr.Relabel(ctx, tk, nil, "agent-smith:enqueued"); err != nil {
		t.Fatalf("Relabel: %v", err)
	}
	if is, _ := s.Issue("acme/app", n); !slices.Contains(is.Labels, "agent-smith:enqueued") {
		t.Errorf("labels = %q", is.Labels)
	}
	// One token served both calls: it is cached until shortly before expiry.
	if got := s.Stats().Calls["POST /app/installations/{installation_id}/access_tokens"]; got != 1 {
		t.Errorf("access token requests = %d, want 1", got)
	}
}

func TestAppRefusedWithWrongKeyOrInstallation(t *testing.T) {
	key, goodPEM := newAppKey(t)
	_, otherPEM := newAppKey(t)
	_, url := appSim(t, key)
	ref := platforms.Ref{Platform: github.Platform, Project: "app", ID: github.FormatID("acme/app", 1)}
	for name, tc := range map[string]struct {
		app    github.App
		status string
	}{
		"key of another app":   {github.App{AppID: appID, InstallationID: installationID, PrivateKey: otherPEM}, "401"},
		"unknown app id":       {github.App{AppID: appID + 1, InstallationID: installationID, PrivateKey: goodPEM}, "401"},
		"foreign installation": {github.App{AppID: appID, InstallationID: installationID + 1, PrivateKey: goodPEM}, "404"},
	} {
		tr, err := github.New(github.Options{BaseURL: url + "/github/", Repo: "acme/app", App: &tc.app})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tr.Get(context.Background(), ref)
		if err == nil || !strings.Contains(err.Error(), "access_tokens") || !strings.Contains(err.Error(), tc.status) {
			t.Errorf("%s: Get = %v, want the access token request refused with %s", name, err, tc.status)
		}
	}
	if _, err := github.New(github.Options{Repo: "acme/app", App: &github.App{AppID: 1, InstallationID: 1, PrivateKey: []byte("not a key")}}); err == nil {
		t.Error("New accepted a private key that is not PEM")
	}
}
