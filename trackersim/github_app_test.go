package trackersim

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// signJWT builds an RS256 JWT by hand, so the sim's checks are tested
// independently of the client library.
func signJWT(t *testing.T, key *rsa.PrivateKey, alg string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]string{"alg": alg, "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(head))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestInstallationTokenEndpoint(t *testing.T) {
	t.Parallel()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := New(Options{Clock: func() time.Time { return now }, Tokens: []string{"static"},
		Apps: []App{{ID: 7, PublicKey: &key.PublicKey, Installations: []int64{70}}}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.CreateIssue("acme/app", "x", "")

	post := func(jwt string, installation string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+"/github/app/installations/"+installation+"/access_tokens", nil)
		if jwt != "" {
			req.Header.Set("Authorization", "Bearer "+jwt)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	valid := map[string]any{"iat": now.Add(-60 * time.Second).Unix(), "exp": now.Add(9 * time.Minute).Unix(), "iss": "7"}

	resp, body := post(signJWT(t, key, "RS256", valid), "70")
	token, _ := body["token"].(string)
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(token, "ghs_") || body["expires_at"] != "2026-01-02T04:04:05Z" {
		t.Fatalf("valid JWT: %d %v", resp.StatusCode, body)
	}
	// The token authenticates API calls; a made-up one does not.
	for tok, want := range map[string]int{token: http.StatusOK, "ghs_madeup": http.StatusUnauthorized} {
		req, _ := http.NewRequest("GET", srv.URL+"/github/repos/acme/app/issues/1", nil)
		req.Header.Set("Authorization", "token "+tok)
		r, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("GET with %.8s…: %d, want %d", tok, r.StatusCode, want)
		}
	}

	numericIss := map[string]any{"iat": valid["iat"], "exp": valid["exp"], "iss": 7}
	if resp, _ := post(signJWT(t, key, "RS256", numericIss), "70"); resp.StatusCode != http.StatusCreated {
		t.Errorf("numeric iss: %d, want 201", resp.StatusCode)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, tc := range map[string]struct {
		jwt, inst string
		want      int
	}{
		"no JWT":         {"", "70", http.StatusUnauthorized},
		"garbage":        {"a.b.c", "70", http.StatusUnauthorized},
		"wrong key":      {signJWT(t, other, "RS256", valid), "70", http.StatusUnauthorized},
		"HS256 header":   {signJWT(t, key, "HS256", valid), "70", http.StatusUnauthorized},
		"expired":        {signJWT(t, key, "RS256", map[string]any{"iat": now.Add(-20 * time.Minute).Unix(), "exp": now.Add(-10 * time.Minute).Unix(), "iss": "7"}), "70", http.StatusUnauthorized},
		"exp too far":    {signJWT(t, key, "RS256", map[string]any{"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "iss": "7"}), "70", http.StatusUnauthorized},
		"iat in future":  {signJWT(t, key, "RS256", map[string]any{"iat": now.Add(5 * time.Minute).Unix(), "exp": now.Add(9 * time.Minute).Unix(), "iss": "7"}), "70", http.StatusUnauthorized},
		"unknown app":    {signJWT(t, key, "RS256", map[string]any{"iat": valid["iat"], "exp": valid["exp"], "iss": "8"}), "70", http.StatusUnauthorized},
		"foreign inst.":  {signJWT(t, key, "RS256", valid), "71", http.StatusNotFound},
		"bad inst. path": {signJWT(t, key, "RS256", valid), "x", http.StatusNotFound},
	} {
		if resp, body := post(tc.jwt, tc.inst); resp.StatusCode != tc.want {
			t.Errorf("%s: %d %v, want %d", name, resp.StatusCode, body, tc.want)
		}
	}
	// Tokens expire after an hour.
	now = now.Add(time.Hour + time.Second)
	req, _ := http.NewRequest("GET", srv.URL+"/github/repos/acme/app/issues/1", nil)
	req.Header.Set("Authorization", "token "+token)
	r, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired installation token: %d, want 401", r.StatusCode)
	}
}
