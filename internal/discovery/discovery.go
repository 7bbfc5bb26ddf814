// Package discovery turns a project that names its GitHub repositories by
// pattern (repos: ["acme/*", "!acme/legacy-*"]) or a GitLab group (group:
// acme/platform) into one project per repository, from the owner's or
// group's listing, before any tracker is built. It runs once, when a
// process starts: the daemon and agentsmithctl then see ordinary projects,
// and one organisation or group webhook reaches them all because each
// expanded project routes by its own path.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Repo is one listed repository (a GitLab project).
type Repo = platforms.ListedRepo

// Lister lists what owner (a GitHub owner, a GitLab group) holds, with
// pc's credentials.
type Lister func(ctx context.Context, pc *config.Project, owner string) ([]Repo, error)

// Options configures Expand. The zero value lists over the real API with
// the platform's default HTTP client.
type Options struct {
	List Lister
	// Client, when set, is the HTTP client the default Lister lists pc's
	// repositories through; nil builds a fresh default client per listing.
	// The Refresher keeps one per configured project, so a relisting
	// revalidates each page with the ETag of the last: GitHub answers an
	// unchanged page 304, which its rate limit does not count
	// (https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate).
	Client func(pc *config.Project) *http.Client
	Logger *zap.Logger
}

// Found is what one discovered project expanded to.
type Found struct {
	Project  string   // the configured name
	Repos    []string // owner/name of each project made, sorted
	Archived int      // matching repositories left out as archived or disabled
	Excluded int      // repositories a "!" pattern left out
}

// Expand replaces, in place and in order, every project of cfg with repos
// patterns by one project per repository its patterns take (config's
// Project.Expand), and leaves the others as they are. Archived and disabled
// repositories are left out: GitHub refuses writes to them. A failed
// listing fails the whole expansion, because a daemon that silently
// watched a subset of an organisation would leave tickets unclaimed with
// nothing in its logs; so does a name that clashes with another project.
func Expand(ctx context.Context, cfg *config.Config, opts Options) ([]Found, error) {
	out, found, err := ExpandProjects(ctx, cfg.Projects, opts)
	if err != nil {
		return nil, err
	}
	cfg.Projects = out
	return found, nil
}

// ExpandProjects is Expand over a project list, which it leaves as it is:
// the Refresher expands the configured list again while the daemon runs.
func ExpandProjects(ctx context.Context, projects []config.Project, opts Options) ([]config.Project, []Found, error) {
	if opts.List == nil {
		opts.List = func(ctx context.Context, pc *config.Project, owner string) ([]Repo, error) {
			var hc *http.Client
			if opts.Client != nil {
				hc = opts.Client(pc)
			}
			return listPlatform(ctx, pc, owner, hc)
		}
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	var out []config.Project
	var found []Found
	for i := range projects {
		pc := &projects[i]
		if !pc.Discovered() {
			out = append(out, *pc)
			continue
		}
		f := Found{Project: pc.Name}
		var made []config.Project
		for _, owner := range pc.RepoOwners() {
			repos, err := opts.List(ctx, pc, owner)
			if err != nil {
				return nil, nil, fmt.Errorf("projects[%d] (%s): %w", i, pc.Name, err)
			}
			for _, r := range repos {
				switch {
				case !pc.Wants(r.Path):
					if matchesInclude(pc, r.Path) {
						f.Excluded++
					}
				case r.Archived:
					f.Archived++
				default:
					made = append(made, pc.Expand(r.Path))
				}
			}
		}
		slices.SortFunc(made, func(a, b config.Project) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range made {
			f.Repos = append(f.Repos, m.Repo)
		}
		if len(made) == 0 {
			log.Warn("repos matched no repository that can be watched", zap.String("project", pc.Name),
				zap.Strings("repos", pc.Repos), zap.Int("archived", f.Archived), zap.Int("excluded", f.Excluded))
		} else {
			log.Info("discovered repositories", zap.String("project", pc.Name), zap.Int("repositories", len(made)),
				zap.Int("archived", f.Archived), zap.Int("excluded", f.Excluded))
		}
		out = append(out, made...)
		found = append(found, f)
	}
	seen := map[string]bool{}
	for _, p := range out {
		if seen[p.Name] {
			return nil, nil, fmt.Errorf("project name %q appears twice after discovery (a discovered repository is named <project>.<repo>); rename one", p.Name)
		}
		seen[p.Name] = true
	}
	if len(out) == 0 {
		return nil, nil, errors.New("no project to serve: every repos pattern matched nothing that can be watched")
	}
	return out, found, nil
}

// matchesInclude reports whether an include pattern (or, for a GitLab
// group without includes, the group) takes the repository at path, so one
// an exclude left out is counted apart from the owner's others.
func matchesInclude(pc *config.Project, path string) bool {
	includes := false
	for _, s := range pc.Repos {
		rp, err := config.ParseRepoPattern(s)
		if err != nil || rp.Exclude {
			continue
		}
		includes = true
		if rp.Match(path) {
			return true
		}
	}
	return !includes && (pc.Group != "" || pc.Installation != "")
}

// listPlatform lists over the real API with the project's credentials,
// through hc (nil: each platform's default client).
func listPlatform(ctx context.Context, pc *config.Project, owner string, hc *http.Client) ([]Repo, error) {
	d, ok := platforms.Lookup(pc.Platform)
	if !ok || d.List == nil {
		return nil, fmt.Errorf("%s: repository discovery is not supported", pc.Platform)
	}
	opts := projects.Options(pc)
	opts.HTTPClient = hc
	return d.List(ctx, opts, owner)
}
