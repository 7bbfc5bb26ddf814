package jira_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/platforms/trackertest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const simToken = "conformance-token"

// redisLocker is the daemon's Locker: a token-owned SET NX PX key from
// pkg/redislock, released only by its owner.
type redisLocker struct{ rdb redis.Cmdable }

func (l redisLocker) TryLock(ctx context.Context, key string, ttl time.Duration) (func(), bool, error) {
	token := redislock.NewToken()
	ok, err := redislock.Acquire(ctx, l.rdb, key, token, ttl)
	if err != nil || !ok {
		return nil, false, err
	}
	return func() { _, _ = redislock.Release(context.WithoutCancel(ctx), l.rdb, key, token) }, true, nil
}

// newSim serves a fresh emulator for t.
func newSim(t *testing.T) (*trackersim.Sim, string) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// projectOf names a Jira project after the (sub)test, so subtests never
// share issues.
func projectOf(t *testing.T) string {
	return "C" + strings.ToUpper(nonKey.ReplaceAllString(t.Name(), ""))
}

var nonKey = regexp.MustCompile(`[^A-Za-z0-9]+`)

// TestConformance runs the shared suite through go-jira against the
// emulator's Jira dialect, once per deployment: Cloud (REST v3, basic auth,
// ADF comments, search/jql) and Data Center (REST v2, bearer PAT, plain
// comments, offset search).
func TestConformance(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	locker := redisLocker{rdb: rdb}
	for _, c := range []struct {
		deployment, email, searchCall string
	}{
		{jira.DeploymentCloud, "bot@example.com", "POST /jira/rest/api/{v}/search/jql"},
		{jira.DeploymentDataCenter, "", "GET /jira/rest/api/{v}/search"},
	} {
		t.Run(c.deployment, func(t *testing.T) {
			s, url := newSim(t)
			if c.deployment == jira.DeploymentDataCenter {
				s.SetJiraDeployment(trackersim.JiraDataCenter)
			}
			issue := func(t *testing.T, ref platforms.Ref) trackersim.Issue {
				t.Helper()
				key, n, err := jira.ParseID(ref.ID)
				if err != nil {
					t.Fatal(err)
				}
				is, ok := s.Issue(key, n)
				if !ok {
					t.Fatalf("emulator has no issue %s", ref.ID)
				}
				return is
			}
			trackertest.Run(t, trackertest.Harness{
				Platform: jira.Platform,
				New: func(t *testing.T) platforms.Tracker {
					s.CreateRepo(projectOf(t))
					tr, err := jira.New(jira.Options{
						BaseURL:    url + "/jira/",
						Repo:       projectOf(t),
						Project:    "conformance",
						Token:      simToken,
						Email:      c.email,
						Deployment: c.deployment,
						Writer:     "conformance",
						Locker:     locker,
					})
					if err != nil {
						t.Fatal(err)
					}
					return tr
				},
				Create: func(t *testing.T, title string, labels ...string) platforms.Ref {
					n := s.CreateIssue(projectOf(t), title, "created by the conformance suite", labels...)
					if n <= 0 {
						t.Fatalf("CreateIssue returned %d", n)
					}
					return platforms.Ref{Platform: jira.Platform, Project: "conformance", ID: jira.FormatID(projectOf(t), n)}
				},
				Labels: func(t *testing.T, ref platforms.Ref) []string { return issue(t, ref).Labels },
				Comments: func(t *testing.T, ref platforms.Ref) []string {
					var out []string
					for _, cm := range issue(t, ref).Comments {
						out = append(out, cm.Body)
					}
					return out
				},
				ForeignWrite: func(t *testing.T, ref platforms.Ref) {
					key, n, _ := jira.ParseID(ref.ID)
					if err := s.AddLabels(key, n, "foreign-writer"); err != nil {
						t.Fatal(err)
					}
				},
				BeforeWrite: func(t *testing.T, ref platforms.Ref, k int, edit func()) func() bool {
					repo, n, _ := jira.ParseID(ref.ID)
					return s.BeforeAPIWrite(repo, n, k, edit)
				},
				HumanLabel: func(t *testing.T, ref platforms.Ref, label string, add bool) {
					repo, n, _ := jira.ParseID(ref.ID)
					if err := s.EditLabel(repo, n, label, add); err != nil {
						t.Fatal(err)
					}
				},
				Block: func(t *testing.T, ref, blocker platforms.Ref) {
					key, n, _ := jira.ParseID(ref.ID)
					_, m, _ := jira.ParseID(blocker.ID)
					if err := s.AddBlocker(key, n, m); err != nil {
						t.Fatal(err)
					}
				},
				Close: func(t *testing.T, ref platforms.Ref) {
					key, n, _ := jira.ParseID(ref.ID)
					if err := s.SetOpen(key, n, false); err != nil {
						t.Fatal(err)
					}
				},
				Webhooks: jira.Webhooks{},
				Sign: func(body []byte, secret string) http.Header {
					h := http.Header{}
					h.Set(jira.HeaderSignature, jira.SignatureHeader(body, []byte(secret)))
					return h
				},
				Fixtures:          "../../testdata/jira",
				ConditionalWrites: false,
				PageSize:          100,
				// The sim's default: Cloud's search/jql lags, Data
				// Center's search does not (sim.DefaultJiraSearchLag).
				SearchLag: searchLag(c.deployment),
			})
			// 2*PageSize+1 matches are three pages.
			if n := s.Stats().Calls[c.searchCall]; n < 3 {
				t.Errorf("emulator saw %d %q requests, want >= 3 (pagination)", n, c.searchCall)
			}
		})
	}
}

// TestRelabelLockHeld: while another writer holds the ticket's label lock,
// Relabel is ErrPreconditionFailed and sends nothing to Jira; once the lock
// is free the same call succeeds.
func TestRelabelLockHeld(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s, url := newSim(t)
	n := s.CreateIssue("LOCK", "Locked", "", "agent-smith:pending")
	tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: "LOCK", Token: simToken, Email: "bot@example.com",
		Locker: redisLocker{rdb: rdb}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := platforms.Ref{Platform: jira.Platform, ID: jira.FormatID("LOCK", n)}
	tk, err := tr.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	key := keys.JiraLabelLock(ref.Key())
	if key != "agentsmith:jira-label-lock:jira:LOCK-1" {
		t.Fatalf("lock key = %q", key)
	}
	other := redislock.NewToken()
	if ok, err := redislock.Acquire(ctx, rdb, key, other, time.Minute); err != nil || !ok {
		t.Fatalf("take the lock as another writer: %v %v", ok, err)
	}
	writesBefore := len(s.Writes())
	_, err = tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued")
	if !errors.Is(err, platforms.ErrPreconditionFailed) {
		t.Fatalf("Relabel under a held lock: err = %v, want ErrPreconditionFailed", err)
	}
	if got := s.Stats().Calls["PUT /jira/rest/api/{v}/issue/{key}"]; got != 0 {
		t.Errorf("%d label writes reached Jira while the lock was held", got)
	}
	if len(s.Writes()) != writesBefore {
		t.Errorf("labels changed while the lock was held: %+v", s.Writes())
	}
	if holder, _, _ := redislock.Holder(ctx, rdb, key); holder != other {
		t.Errorf("lock holder after the refused write = %q, want the other writer's", holder)
	}

	if _, err := redislock.Release(ctx, rdb, key, other); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Relabel(ctx, tk, []string{"agent-smith:pending"}, "agent-smith:enqueued"); err != nil {
		t.Fatalf("Relabel after release: %v", err)
	}
	is, _ := s.Issue("LOCK", n)
	if !slices.Equal(is.Labels, []string{"agent-smith:enqueued"}) {
		t.Errorf("labels = %q, want [agent-smith:enqueued]", is.Labels)
	}
	if holder, _, _ := redislock.Holder(ctx, rdb, key); holder != "" {
		t.Errorf("lock still held by %q after the write", holder)
	}
}

// searchLag is how far the sim's search lags for a deployment.
func searchLag(deployment string) time.Duration {
	if deployment == jira.DeploymentCloud {
		return trackersim.DefaultJiraSearchLag
	}
	return 0
}
