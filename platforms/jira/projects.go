package jira

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// maxListedProjects bounds one site's listing, so a listing that never
// ends cannot hold a replica's start forever.
const maxListedProjects = 100_000

// ListProjects lists the keys of the site's live projects that opts'
// credentials can browse. Jira Cloud pages them: GET
// /rest/api/3/project/search?startAt=&maxResults=50 until isLast
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-projects/#api-rest-api-3-project-search-get);
// Data Center answers every project at once: GET /rest/api/2/project
// (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/project-getAllProjects).
// Both leave archived projects out by default.
func ListProjects(ctx context.Context, opts Options) ([]string, error) {
	if opts.BaseURL == "" {
		return nil, fmt.Errorf("jira: base URL is required")
	}
	hc := trackerhttp.ClientOr(opts.HTTPClient, opts.Logger, trackerhttp.JiraRateLimits)
	hc = authed(hc, opts)
	site := strings.TrimRight(opts.BaseURL, "/") + "/"
	type project struct {
		Key string `json:"key"`
	}
	if opts.Deployment == DeploymentDataCenter {
		var all []project
		if err := getJSON(ctx, hc, site+"rest/api/2/project", &all); err != nil {
			return nil, fmt.Errorf("jira: list projects: %w", err)
		}
		out := make([]string, 0, len(all))
		for _, p := range all {
			out = append(out, p.Key)
		}
		return out, nil
	}
	var out []string
	for start := 0; ; {
		var page struct {
			IsLast bool      `json:"isLast"`
			Values []project `json:"values"`
		}
		q := url.Values{"startAt": {strconv.Itoa(start)}, "maxResults": {"50"}}
		if err := getJSON(ctx, hc, site+"rest/api/3/project/search?"+q.Encode(), &page); err != nil {
			return nil, fmt.Errorf("jira: list projects (from %d): %w", start, err)
		}
		for _, p := range page.Values {
			out = append(out, p.Key)
		}
		if len(out) >= maxListedProjects {
			return nil, fmt.Errorf("jira: list projects: more than %d", maxListedProjects)
		}
		if page.IsLast || len(page.Values) == 0 {
			return out, nil
		}
		start += len(page.Values)
	}
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", req.URL.Path, err)
	}
	return nil
}
