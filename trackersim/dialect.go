package trackersim

import (
	"net/http"
	"strings"
	"time"
)

// A dialect is one tracker's REST API and webhook format over the shared
// store. Each dialect lives in its own files and registers itself from an
// init function with registerDialect, so adding a tracker touches no shared
// file. The GitLab, Azure DevOps and Jira dialects are the pattern to copy:
// <name>.go registers the dialect and serves the endpoints the daemon's SDK
// calls (authenticating and applying faults per request), <name>_json.go
// holds the JSON shapes where they are many (Azure DevOps, Jira),
// <name>_webhook.go builds the deliveries and
// <name>_check.go serves what `agentsmithd check` reads. Cite the tracker's
// documentation (or the issue thread that shows its real behaviour) next
// to each behaviour a dialect reproduces.
type dialect struct {
	// name is the Hook.Dialect value that selects this dialect's webhook
	// format ("gitlab", "ado", "jira"); GitHub is "" or "github".
	name string
	// prefix is the URL path the dialect's routes live under ("/gitlab/");
	// it is shown on the page as the dialect's API base.
	prefix string
	// apiPath is appended to the sim's base URL to form the SDK base URL
	// shown on the page ("/gitlab/api/v4/"); empty means prefix.
	apiPath string
	// routes registers the dialect's handlers; every pattern must start
	// with prefix (e.g. "GET /gitlab/api/v4/projects/{id}/issues").
	routes func(s *Sim, mux *http.ServeMux)
	// deliveries turns the events of one store mutation into the webhook
	// POSTs for one hook of this dialect. It runs under the store's lock and
	// must not call the store; evs[0].issue is the issue after the write.
	// Each outgoing needs event, guid (the de-dup id, for logs) and body;
	// header carries every delivery header (content type, event name, de-dup
	// id, secret or signature). Returning nil sends nothing. Faults (drop,
	// duplicate) are applied by the caller to each returned delivery.
	deliveries func(s *Sim, evs []storeEvent, hookID int64, h Hook) []outgoing
	// ping, if set, is sent once when a hook of this dialect is added.
	ping func(s *Sim, hookID int64, h Hook) (outgoing, bool)
}

// dialects holds every registered non-GitHub dialect in registration order.
// GitHub is built in (githubRoutes, onEvent, githubPing).
var dialects []dialect

// registerDialect adds a dialect; call it from an init function in the
// dialect's own file.
func registerDialect(d dialect) { dialects = append(dialects, d) }

// dialectFor returns the registered dialect named name.
func dialectFor(name string) (dialect, bool) {
	for _, d := range dialects {
		if d.name == name {
			return d, true
		}
	}
	return dialect{}, false
}

// isGitHubHook reports whether a hook uses GitHub's webhook format.
func isGitHubHook(h Hook) bool { return h.Dialect == "" || h.Dialect == "github" }

// dialectRoutes registers every dialect's routes on mux.
func (s *Sim) dialectRoutes(mux *http.ServeMux) {
	for _, d := range dialects {
		d.routes(s, mux)
	}
}

// dialectEvents queues the deliveries of non-GitHub hooks for one mutation.
// It runs under the store's lock, like onEvent.
func (s *Sim) dialectEvents(evs []storeEvent, hooks []*hookQueue) {
	for _, q := range hooks {
		if isGitHubHook(q.hook) {
			continue
		}
		d, ok := dialectFor(q.hook.Dialect)
		if !ok || d.deliveries == nil {
			continue
		}
		for _, out := range d.deliveries(s, evs, q.id, q.hook) {
			drop, extra := s.faults.delivery()
			s.hooks.enqueue(q, out, drop, extra)
		}
	}
}

// apiBases lists "name: base URL" for every dialect, GitHub first, for the
// page's header.
func (s *Sim) apiBases(base string) []string {
	out := []string{"github: " + base + "/github/"}
	for _, d := range dialects {
		p := d.apiPath
		if p == "" {
			p = d.prefix
		}
		out = append(out, d.name+": "+base+"/"+strings.TrimPrefix(p, "/"))
	}
	return out
}

// countCall records one API request under key ("GET /gitlab/api/v4/projects/{id}/issues")
// in Stats.Calls, as GitHub's routes do.
func (s *Sim) countCall(key string) { s.count(func(st *Stats) { st.Calls[key]++ }) }

// applyFault waits out an injected latency and reports the fault to answer
// with (rateLimit: a 429 with fault.retryAfter seconds; badGateway: a 502),
// in the dialect's own error shape. ok is false when the client went away.
func (s *Sim) applyFault(r *http.Request) (fault apiFault, ok bool) {
	fault = s.faults.api()
	if fault.latency > 0 {
		t := time.NewTimer(fault.latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return fault, false
		}
	}
	return fault, true
}

// actionCommented is the store event of a new comment.
const actionCommented = "commented"

// splitComment separates a mutation's new comment (nil if none) from its
// other events: every platform sends a comment its own webhook (GitHub
// issue_comment, GitLab Note Hook, Azure DevOps workitem.commented, Jira
// comment_created), apart from the issue event of the same write.
func splitComment(evs []storeEvent) (rest []storeEvent, c *storeEvent) {
	for i := range evs {
		if evs[i].action == actionCommented {
			c = &evs[i]
			continue
		}
		rest = append(rest, evs[i])
	}
	return rest, c
}
