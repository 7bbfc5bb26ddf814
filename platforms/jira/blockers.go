package jira

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.BlockerReader = (*Tracker)(nil)

// blockedByInward is the inward description of Jira's built-in "Blocks"
// link type: on the blocked issue, the blocker is the link's inwardIssue.
const blockedByInward = "is blocked by"

// issueLinks is the part of an issue's fields.issuelinks the readiness
// check reads.
type issueLinks struct {
	Fields struct {
		IssueLinks []struct {
			Type struct {
				Name   string `json:"name"`
				Inward string `json:"inward"`
			} `json:"type"`
			InwardIssue *struct {
				Key    string `json:"key"`
				Fields struct {
					Status *struct {
						StatusCategory *struct {
							Key string `json:"key"`
						} `json:"statusCategory"`
					} `json:"status"`
				} `json:"fields"`
			} `json:"inwardIssue"`
		} `json:"issuelinks"`
	} `json:"fields"`
}

// OpenBlockers lists the issues linked to the ticket as "is blocked by"
// whose status category is not Done. One call: GET issue/{key}?fields=issuelinks
// (the linked issues come with their status).
func (t *Tracker) OpenBlockers(ctx context.Context, ref platforms.Ref) ([]string, error) {
	key, err := t.issueKey(ref)
	if err != nil {
		return nil, err
	}
	var is issueLinks
	if err := t.do(ctx, http.MethodGet, t.api+"issue/"+url.PathEscape(key)+"?fields=issuelinks", nil, &is); err != nil {
		return nil, fmt.Errorf("jira: blockers of %s: %w", key, err)
	}
	var open []string
	for _, l := range is.Fields.IssueLinks {
		b := l.InwardIssue
		if b == nil || b.Key == "" || !strings.EqualFold(strings.TrimSpace(l.Type.Inward), blockedByInward) {
			continue
		}
		done := b.Fields.Status != nil && b.Fields.Status.StatusCategory != nil && b.Fields.Status.StatusCategory.Key == "done"
		if !done {
			open = append(open, b.Key)
		}
	}
	slices.Sort(open)
	return slices.Compact(open), nil
}
