package trackersim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// Get issue's expand=changelog embeds only the latest 100 histories, total
// the full count; Cloud's Get changelogs pages all of them oldest first
// until isLast; Data Center has no such resource (404).
func TestJiraChangelogEmbedsLatest100AndPages(t *testing.T) {
	t.Parallel()
	s, api := startJira(t)
	n := s.As("bob").CreateIssue("LOG", "long-lived", "")
	if err := s.As("alice").AddLabels("LOG", n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	carol := s.As("carol")
	for i := range 149 {
		err := carol.AddLabels("LOG", n, "noise")
		if i%2 == 1 {
			err = carol.RemoveLabel("LOG", n, "noise")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	issue := api + "3/issue/LOG-" + strconv.Itoa(n)
	type history struct {
		ID     string `json:"id"`
		Author struct {
			AccountID string `json:"accountId"`
		} `json:"author"`
		Items []struct {
			Field    string `json:"field"`
			ToString string `json:"toString"`
		} `json:"items"`
	}
	a := jiraDo(t, "GET", issue+"?fields=labels&expand=changelog", "", nil)
	var is struct {
		Changelog struct {
			Total     int       `json:"total"`
			Histories []history `json:"histories"`
		} `json:"changelog"`
	}
	if a.code != http.StatusOK || json.Unmarshal(a.body, &is) != nil {
		t.Fatalf("get issue %d %s", a.code, a.body)
	}
	alice := ActorName("jira", "alice")
	if got := len(is.Changelog.Histories); got != 100 || is.Changelog.Total != 150 {
		t.Fatalf("embedded %d histories of total %d, want the latest 100 of 150", got, is.Changelog.Total)
	}
	for _, h := range is.Changelog.Histories {
		if h.Author.AccountID == alice {
			t.Errorf("embedded history %s by alice: want only the latest 100, carol's", h.ID)
		}
	}

	var all []history
	for startAt, pages := 0, 0; ; pages++ {
		if pages > 5 {
			t.Fatal("no isLast after 5 pages")
		}
		a := jiraDo(t, "GET", issue+"/changelog?maxResults=100&startAt="+strconv.Itoa(startAt), "", nil)
		var page struct {
			StartAt, MaxResults, Total int
			IsLast                     bool      `json:"isLast"`
			Values                     []history `json:"values"`
		}
		if a.code != http.StatusOK || json.Unmarshal(a.body, &page) != nil {
			t.Fatalf("changelog %d %s", a.code, a.body)
		}
		if page.Total != 150 || page.StartAt != startAt {
			t.Errorf("page at %d: startAt %d total %d", startAt, page.StartAt, page.Total)
		}
		all = append(all, page.Values...)
		if page.IsLast {
			break
		}
		startAt += len(page.Values)
	}
	if len(all) != 150 || all[0].Author.AccountID != alice || all[0].Items[0].ToString != "agent-smith" {
		t.Errorf("paged %d histories, first %+v: want 150, alice's add first", len(all), all[0])
	}

	s.SetJiraDeployment(JiraDataCenter)
	if a := jiraDo(t, "GET", api+"2/issue/LOG-"+strconv.Itoa(n)+"/changelog", "", nil); a.code != http.StatusNotFound {
		t.Errorf("Data Center changelog: %d, want 404", a.code)
	}
}
