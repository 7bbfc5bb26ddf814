package azuredevops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/servicehooks"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/workitemtracking"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// This file is the only one that knows how azure-devops-go-api builds its
// clients. The SDK's own constructor (workitemtracking.NewClient) makes a
// fresh http.Client per base URL and offers no way to pass one in, so the
// tracker repeats its two discovery steps with the SDK's exported pieces and
// an injected client:
//
//  1. GET {org}/_apis/ResourceAreas (itself located through OPTIONS
//     {org}/_apis) names the base URL of the work item tracking area;
//  2. OPTIONS {area base}/_apis lists the route templates and API versions
//     every later call is built from.
//
// Both answers are cached: the first in sdkClient, the second by the SDK in
// a process-wide map keyed by base URL.

// sdkClient resolves the work item tracking client on first use.
type sdkClient struct {
	conn   *azuredevops.Connection
	orgURL string
	hc     *http.Client

	mu  sync.Mutex
	wit *workitemtracking.ClientImpl
}

func newSDKClient(orgURL, token string, hc *http.Client) *sdkClient {
	var conn *azuredevops.Connection
	if token != "" {
		conn = azuredevops.NewPatConnection(orgURL, token)
	} else {
		conn = azuredevops.NewAnonymousConnection(orgURL)
	}
	conn.UserAgent = "agentsmithd"
	// The SDK stores the X-TFS-Session header of any response in a package
	// variable that every request reads: a data race across concurrent
	// trackers. Dropping the header from responses keeps the SDK on its own
	// per-process session id.
	c := *hc
	c.Transport = &sdkTransport{next: hc.Transport}
	return &sdkClient{conn: conn, orgURL: orgURL, hc: &c}
}

// client returns the work item tracking client, discovering its base URL
// once. A failed discovery is retried by the next call.
func (c *sdkClient) client(ctx context.Context) (*workitemtracking.ClientImpl, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wit != nil {
		return c.wit, nil
	}
	base := azuredevops.NewClientWithOptions(c.conn, c.orgURL, azuredevops.WithHTTPClient(c.hc))
	areas, err := base.GetResourceAreas(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover resource areas at %s: %w", c.orgURL, classify(err))
	}
	url := c.orgURL // Azure DevOps Server answers with no areas: everything is local.
	if areas != nil && len(*areas) > 0 {
		url = ""
		for _, a := range *areas {
			if a.Id != nil && *a.Id == workitemtracking.ResourceAreaId && a.LocationUrl != nil {
				url = *a.LocationUrl
			}
		}
		if url == "" {
			return nil, fmt.Errorf("discover resource areas at %s: no work item tracking area", c.orgURL)
		}
	}
	c.wit = &workitemtracking.ClientImpl{
		Client: *azuredevops.NewClientWithOptions(c.conn, url, azuredevops.WithHTTPClient(c.hc)),
	}
	return c.wit, nil
}

// serviceHooks is the service hooks client (check --webhook's test
// notifications). The service hooks area lives at the organization's URL,
// so there is no area to discover; the SDK locates the resource through
// OPTIONS {org}/_apis on first use.
func (c *sdkClient) serviceHooks() *servicehooks.ClientImpl {
	return &servicehooks.ClientImpl{Client: *azuredevops.NewClientWithOptions(c.conn, c.orgURL, azuredevops.WithHTTPClient(c.hc))}
}

// sdkTransport adapts responses to what the SDK can digest: it drops
// X-TFS-Session (see newSDKClient), and turns an error response whose body
// is not JSON (a proxy's HTML page) into a JSON error, because the SDK
// otherwise reports the JSON syntax error and loses the status code that
// classify decides on.
type sdkTransport struct{ next http.RoundTripper }

// maxErrorBody bounds how much of a non-JSON error body is kept.
const maxErrorBody = 512

func (t *sdkTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Header.Del("X-TFS-Session")
	if signInPage(resp) {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		resp.StatusCode, resp.Status = http.StatusUnauthorized, "401 Unauthorized"
		resp.Header.Set("Content-Type", "text/html")
		resp.Body = io.NopCloser(strings.NewReader(signInMessage))
	}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode < 300 || strings.Contains(ct, "json") || strings.Contains(ct, azuredevops.MediaTypeTextPlain) {
		return resp, nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	msg := strings.TrimSpace(resp.Status + ": " + string(bytes.ToValidUTF8(snippet, nil)))
	body, _ := json.Marshal(map[string]string{"message": msg})
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// signInMessage stands for the sign-in page in errors.
const signInMessage = "203 Non-Authoritative Information with a sign-in page: the PAT is wrong, expired or revoked"

// signInPage reports whether resp is how Azure DevOps Services refuses a
// wrong, expired or wrongly encoded PAT on a GET or POST: 203
// Non-Authoritative Information with an HTML sign-in page in place of the
// resource (microsoft/azure-devops-auth-samples#52;
// MicrosoftDocs/vsts-rest-api-specs#97, #574). A PATCH with the same PAT
// gets 401. The 203 is an authentication failure, not a transient answer:
// sdkTransport and getJSON turn it into the 401 it means, so the SDK's
// caller sees the status (not "invalid character '<'") and classify
// refuses it as a permanent rejection.
func signInPage(resp *http.Response) bool {
	return resp.StatusCode == http.StatusNonAuthoritativeInfo && !strings.Contains(resp.Header.Get("Content-Type"), "json")
}

// statusOf is the HTTP status of an SDK error, 0 if it carries none. The SDK
// returns its WrappedError both by value and by pointer.
func statusOf(err error) int {
	var v azuredevops.WrappedError
	if errors.As(err, &v) && v.StatusCode != nil {
		return *v.StatusCode
	}
	var p *azuredevops.WrappedError
	if errors.As(err, &p) && p != nil && p.StatusCode != nil {
		return *p.StatusCode
	}
	return 0
}

// classify maps SDK errors onto the sentinels callers decide on. A failed
// "test /rev" operation is answered 412 (409 is accepted too: the
// specification names both for a revision conflict).
func classify(err error) error {
	switch statusOf(err) {
	case http.StatusPreconditionFailed, http.StatusConflict:
		return fmt.Errorf("%w: %w", platforms.ErrPreconditionFailed, err)
	case http.StatusNotFound, http.StatusGone:
		return fmt.Errorf("%w: %w", platforms.ErrNotFound, err)
	case http.StatusTooManyRequests:
		if !errors.Is(err, trackerhttp.ErrRateLimited) {
			return fmt.Errorf("%w: %w", trackerhttp.ErrRateLimited, err)
		}
	}
	return platforms.Rejected(statusOf(err), err)
}
