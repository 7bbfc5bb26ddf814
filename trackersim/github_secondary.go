package trackersim

import (
	"net/http"
	"regexp"
	"sync"
	"time"
)

// GitHub's documented secondary rate limits, enforced when
// Options.GitHubSecondaryLimits is set
// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits,
// the same text for the GraphQL API):
//
//   - points per minute on one endpoint: at most 900 on the REST API and
//     2,000 on the GraphQL endpoint, a GET/HEAD/OPTIONS being 1 point, a
//     REST write 5, a GraphQL request 1 and one with a mutation 5
//     ("Calculating points for the secondary rate limit"); the sim counts
//     all of a token's REST requests as one endpoint, the stricter reading;
//   - content creation: at most 80 content-generating requests a minute and
//     500 an hour, REST and GraphQL together ("Create too much content on
//     GitHub in a short amount of time"). GitHub does not list which
//     requests generate content. The refusals reported are of creations:
//     issues and comments ("was submitted too quickly" creating issues,
//     cli/cli#4801, where a GitHub engineer puts the limits down to the
//     notifications "every issue or comment creation" can send; issue
//     creation in checkmarx-ltd/cx-flow#1078; "blocked from content
//     creation" creating a comment in apache/arrow#48162). So by default
//     the sim counts a REST POST that creates something (an issue, a
//     comment, a reaction, a repository label) and not a label written on
//     an issue, nor an edit or a removal; with
//     Options.GitHubLabelsAsContent it counts every REST write and every
//     GraphQL label mutation, the strict reading. Over it a REST write is
//     the 403 "You have exceeded a secondary rate limit" and a GraphQL
//     mutation fails with {"type":"UNPROCESSABLE","message":"was submitted
//     too quickly"} in a 200 answer (cli/cli#4801,
//     Azure/azure-sdk-tools#7226).
//
// Windows slide over the injected clock.

const (
	ghRESTPointsPerMinute    = 900
	ghGraphQLPointsPerMinute = 2000
	ghContentPerMinute       = 80
	ghContentPerHour         = 500
	ghSecondaryWritePoints   = 5
)

// secondaryLimits keeps each token's recent secondary points and content
// creations.
type secondaryLimits struct {
	mu     sync.Mutex
	tokens map[string]*secondaryUse
}

type secondaryUse struct {
	rest, graphql []stamp // points in the last minute
	content       []time.Time
}

type stamp struct {
	at     time.Time
	points int
}

func (l *secondaryLimits) use(token string) *secondaryUse {
	if l.tokens == nil {
		l.tokens = map[string]*secondaryUse{}
	}
	u := l.tokens[token]
	if u == nil {
		u = &secondaryUse{}
		l.tokens[token] = u
	}
	return u
}

// points charges points to the token's REST or GraphQL minute and reports
// whether they fit; a refused request is not charged.
func (l *secondaryLimits) points(token string, graphql bool, points int, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.use(token)
	list, limit := &u.rest, ghRESTPointsPerMinute
	if graphql {
		list, limit = &u.graphql, ghGraphQLPointsPerMinute
	}
	kept := (*list)[:0]
	sum := 0
	for _, s := range *list {
		if now.Sub(s.at) < time.Minute {
			kept = append(kept, s)
			sum += s.points
		}
	}
	*list = kept
	if sum+points > limit {
		return false
	}
	*list = append(*list, stamp{now, points})
	return true
}

// content records one content-generating request and reports whether it
// fits the minute's and the hour's limits; a refused one is not recorded.
func (l *secondaryLimits) content(token string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.use(token)
	kept := u.content[:0]
	minute := 0
	for _, at := range u.content {
		if now.Sub(at) < time.Hour {
			kept = append(kept, at)
			if now.Sub(at) < time.Minute {
				minute++
			}
		}
	}
	u.content = kept
	if minute >= ghContentPerMinute || len(kept) >= ghContentPerHour {
		return false
	}
	u.content = append(u.content, now)
	return true
}

// createsContent says whether a REST write counts toward the content
// creation limit: every write in the strict reading (labelsAsContent),
// else a POST other than adding labels to an issue.
func createsContent(r *http.Request, labelsAsContent bool) bool {
	if labelsAsContent {
		return true
	}
	return r.Method == http.MethodPost && !issueLabelsPath.MatchString(r.URL.Path)
}

// issueLabelsPath matches an issue's labels, and one of them.
var issueLabelsPath = regexp.MustCompile(`/repos/[^/]+/[^/]+/issues/[0-9]+/labels(/|$)`)
