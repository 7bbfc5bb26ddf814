package azuredevops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// OrgProject is one project an organisation listing returned.
type OrgProject struct {
	Name string
	// State is the project's lifecycle state; only "wellFormed" projects
	// are usable (the others are being created, deleted or renamed).
	State string
}

// maxListedProjects bounds one organisation's listing, so a listing that
// never ends cannot hold a replica's start forever.
const maxListedProjects = 100_000

// ListProjects lists the projects of organisation org that opts' token can
// see: GET {org}/_apis/projects?api-version=7.1&$top=100, following the
// x-ms-continuationtoken response header with continuationToken
// (https://learn.microsoft.com/rest/api/azure/devops/core/projects/list).
// Plain REST rather than the SDK's core client: the call needs no route
// discovery, and the token stays in the Authorization header only.
func ListProjects(ctx context.Context, opts Options, org string) ([]OrgProject, error) {
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := trackerhttp.ClientOr(opts.HTTPClient, opts.Logger, trackerhttp.AzureDevOpsRateLimits)
	auth := ""
	if opts.Token != "" {
		auth = newSDKClient("", opts.Token, hc).conn.AuthorizationString
	}
	var out []OrgProject
	token := ""
	for page := 1; ; page++ {
		q := url.Values{"api-version": {"7.1"}, "$top": {"100"}}
		if token != "" {
			q.Set("continuationToken", token)
		}
		u := strings.TrimRight(base, "/") + "/" + url.PathEscape(org) + "/_apis/projects?" + q.Encode()
		var body struct {
			Value []struct {
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"value"`
		}
		_, next, err := getJSON(ctx, hc, u, auth, &body)
		if err != nil {
			return nil, fmt.Errorf("azuredevops: list projects of %s (page %d): %w", org, page, err)
		}
		for _, p := range body.Value {
			out = append(out, OrgProject{Name: p.Name, State: p.State})
		}
		if len(out) >= maxListedProjects {
			return nil, fmt.Errorf("azuredevops: list projects of %s: more than %d", org, maxListedProjects)
		}
		if next == "" || next == token {
			return out, nil
		}
		token = next
	}
}

// getJSON GETs u with the Authorization header auth (none when "") and
// decodes a 200's JSON body into v; it returns the status and the
// x-ms-continuationtoken header, which paged lists set while more remain.
func getJSON(ctx context.Context, hc *http.Client, u, auth string, v any) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Accept", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if signInPage(resp) {
		return http.StatusUnauthorized, "", platforms.Rejected(http.StatusUnauthorized, fmt.Errorf("GET %s: %s", req.URL.Path, signInMessage))
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode, "", fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v); err != nil {
		return resp.StatusCode, "", fmt.Errorf("decode %s: %w", req.URL.Path, err)
	}
	return resp.StatusCode, resp.Header.Get("X-Ms-Continuationtoken"), nil
}
