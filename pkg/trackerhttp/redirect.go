package trackerhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ErrMovedElsewhere is a redirect CheckRedirect refused: the tracker sent
// the request to another resource than the one it named (a transferred
// GitHub issue, a Jira issue moved under a new key). For the caller the
// ticket it asked for is gone from where it was; platforms map it to
// platforms.ErrNotFound.
var ErrMovedElsewhere = errors.New("redirected to another resource")

// maxRedirects is net/http's own limit, kept.
const maxRedirects = 10

// CheckRedirect is the http.Client.CheckRedirect of every tracker client
// (NewClientWith). It follows a redirect only to the resource the first
// request named: the same scheme, host and query, and the same path once
// the repository part is set aside ("/repos/{owner}/{repo}",
// "/repositories/{id}" or "/projects/{id}"). That is what a renamed
// GitHub repository answers: 301 for GET and 307 for other methods to
// /repositories/{id}/… with the rest of the path kept, and GitHub asks
// clients to follow it ("HTTP redirects",
// https://docs.github.com/rest/overview/resources-in-the-rest-api#http-redirects,
// cited in sigma/gh.el#106; 18F/charlie#85 shows the 307 of a POST). A transferred issue's old URL answers a
// redirect to the issue in its new repository under another number
// (MarcusJellinghaus/mcp-workspace#256: #72 became another repository's
// #220, and the client followed): following it would read, label and
// comment on a ticket that is not the one the daemon claimed, so it is
// refused with ErrMovedElsewhere.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if from := via[0].URL; !sameResource(from, req.URL) {
		return fmt.Errorf("%w: %s %s redirected to %s", ErrMovedElsewhere, via[0].Method, from.Redacted(), req.URL.Redacted())
	}
	return nil
}

// sameResource reports whether a redirect from one URL to another keeps
// the resource, as CheckRedirect decides.
func sameResource(from, to *url.URL) bool {
	if !strings.EqualFold(from.Scheme, to.Scheme) || !strings.EqualFold(from.Host, to.Host) || from.RawQuery != to.RawQuery {
		return false
	}
	fp, ft := splitRepository(from.Path)
	tp, tt := splitRepository(to.Path)
	return slices.Equal(fp, tp) && slices.Equal(ft, tt)
}

// splitRepository splits a path into what comes before its repository
// part and what comes after it; a path without one is all prefix.
func splitRepository(path string) (prefix, tail []string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		n := 0
		switch s {
		case "repos":
			n = 3
		case "repositories", "projects":
			n = 2
		}
		if n > 0 && i+n <= len(segs) {
			return segs[:i], segs[i+n:]
		}
	}
	return segs, nil
}
