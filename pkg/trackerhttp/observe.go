package trackerhttp

import (
	"net/http"
	"strconv"
	"time"
)

// Call is one request as it went to the network: after the cache answered
// what it could and each rate-limit retry counted on its own, so a Call is
// what a tracker counts against the caller's quota.
type Call struct {
	Method string
	// Status is the response's status code, 0 when no response came back
	// (connection refused, timeout, a fenced-off write).
	Status int
	// Remaining is the request quota the tracker reported left for these
	// credentials, -1 when the response carried no rate-limit header.
	Remaining int
	Duration  time.Duration
	// Err is the transport's error when no response came back (Status 0).
	Err error
}

// CallObserver receives every Call a transport makes (metrics). It runs on
// the request path: it must not block.
type CallObserver interface {
	ObserveCall(Call)
}

// Rate-limit remaining headers: GitHub and Azure DevOps send the X- form;
// GitLab and the IETF draft (RateLimit header fields) the bare one.
const headerRemainingDraft = "RateLimit-Remaining"

// RemainingQuota reads the requests-left count a tracker reported in h, or
// -1 when it reported none (Jira Cloud, for one, sends no such header on
// most answers).
func RemainingQuota(h http.Header) int {
	for _, name := range []string{headerRemaining, headerRemainingDraft} {
		if v := h.Get(name); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return n
			}
		}
	}
	return -1
}

// observed reports each round trip to an observer. It sits right above the
// fence gate, so writes the fence stopped count as failed calls with no
// status (they never left) — exactly what an operator chasing "why did that
// label not change" wants to see.
type observed struct {
	next  http.RoundTripper
	obs   CallObserver
	clock func() time.Time
}

func (o observed) RoundTrip(req *http.Request) (*http.Response, error) {
	start := o.clock()
	resp, err := o.next.RoundTrip(req)
	c := Call{Method: req.Method, Remaining: -1, Duration: o.clock().Sub(start)}
	if err == nil {
		c.Status, c.Remaining = resp.StatusCode, RemainingQuota(resp.Header)
	} else {
		c.Err = err
	}
	o.obs.ObserveCall(c)
	return resp, err
}
