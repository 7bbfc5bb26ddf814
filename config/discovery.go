package config

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// A GitHub project may name its repositories by pattern instead of one by
// one (repos: ["acme/*", "!acme/legacy-*"]), an Azure DevOps project the
// projects of an organisation (repos: ["acmeorg/*"]), a Jira project the
// site's project keys (repos: ["APP*", "!LEGACY"]), and a GitLab project a group
// (group: acme/platform, subgroups included, repos then filtering the
// projects' full paths): the daemon lists them when it starts
// (internal/discovery) and runs one project per match, named
// "<name>.<path>", so platform teams serve an organisation from one block
// and one organisation or group webhook.

// Override changes what some of a discovered project's repositories get.
// The first override whose Repos match a repository applies; fields left
// empty keep the project's.
type Override struct {
	// Repos are owner/name patterns (path.Match syntax) this override is for.
	Repos        []string      `yaml:"repos"`
	TriggerLabel string        `yaml:"trigger_label"`
	Command      []string      `yaml:"command"`
	Timeout      time.Duration `yaml:"timeout"`
	MaxAttempts  int           `yaml:"max_attempts"`
}

// RepoPlaceholder in a discovered project's workspace.git.url stands for
// each repository's owner/name.
const RepoPlaceholder = "{repo}"

// Discovered reports whether the project names its repositories by
// pattern or group and must be expanded before trackers are built.
func (p *Project) Discovered() bool {
	return len(p.Repos) > 0 || p.Group != "" || p.Installation != ""
}

// InstallationAll is projects[].installation's one value.
const InstallationAll = "all"

// RepoPattern is one parsed entry of repos: Exclude for a leading "!".
type RepoPattern struct {
	Owner, Name string // Name is a path.Match pattern
	Exclude     bool
}

// ParseRepoPattern parses "owner/pattern" or "!owner/pattern". The owner is
// literal: discovery lists one owner's repositories per distinct owner, and
// a pattern over owners would mean listing every owner on the site.
func ParseRepoPattern(s string) (RepoPattern, error) {
	var p RepoPattern
	if rest, ok := strings.CutPrefix(s, "!"); ok {
		p.Exclude, s = true, rest
	}
	owner, name, ok := strings.Cut(s, "/")
	switch {
	case !ok && s != "":
		// A pattern over a Jira site's project keys: no owner.
		if _, err := path.Match(s, ""); err != nil {
			return p, fmt.Errorf("%q: %v", s, err)
		}
		p.Name = s
		return p, nil
	case !ok || owner == "" || name == "":
		return p, fmt.Errorf("%q: want owner/pattern, e.g. acme/* or !acme/legacy-*", s)
	case !ghName.MatchString(owner):
		return p, fmt.Errorf("%q: the owner (GitHub login, GitLab top-level group) must be literal (A-Z, a-z, 0-9, ., _, -)", s)
	}
	if _, err := path.Match(name, ""); err != nil {
		return p, fmt.Errorf("%q: %v", s, err)
	}
	p.Owner, p.Name = owner, name
	return p, nil
}

// Match reports whether the pattern names the repository at full path
// (owner/name, or group/subgroup/project on GitLab, where "*" stays within
// one segment); paths compare case-insensitively, as both platforms' do.
func (p RepoPattern) Match(full string) bool {
	if p.Owner == "" { // a Jira project key
		ok, _ := path.Match(strings.ToLower(p.Name), strings.ToLower(full))
		return ok && !strings.Contains(full, "/")
	}
	owner, name, ok := strings.Cut(full, "/")
	if !ok || !strings.EqualFold(p.Owner, owner) {
		return false
	}
	ok, _ = path.Match(strings.ToLower(p.Name), strings.ToLower(name))
	return ok
}

func (p *Project) validateDiscovery(errs *Errors, path string) {
	if !p.Discovered() {
		if len(p.Overrides) > 0 {
			errs.add(path+".overrides", "only with repos or group (repositories found when the daemon starts)")
		}
		return
	}
	caps := p.capabilities()
	switch {
	case caps.Groups && p.Group == "":
		errs.add(path+".group", "required with repos on gitlab: the group whose projects are listed (subgroups included)")
	case caps.Groups:
		if err := checkGitLabGroup(p.Group); err != nil {
			errs.add(path+".group", err.Error())
		}
	case p.Group != "":
		errs.add(path+".group", "only for platform gitlab; a GitHub project names repos patterns")
	}
	switch {
	case p.Installation == "":
	case p.Installation != InstallationAll:
		errs.add(path+".installation", fmt.Sprintf("%q: the one value is %q (every repository of the App's installation)", p.Installation, InstallationAll))
	case !caps.GitHubApp || !p.GitHubApp.IsSet():
		errs.add(path+".installation", "only for a github project authenticated with github_app")
	}
	if p.Repo != "" {
		errs.add(path+".repo", "set either repo or repos/group, not both")
	}
	if g := p.Workspace.Git; g.On() && !strings.Contains(g.URL, RepoPlaceholder) {
		errs.add(path+".workspace.git.url", "with repos or group it needs "+RepoPlaceholder+" (each repository's path), or every repository would push to one")
	}
	includes := 0
	for i, s := range p.Repos {
		rp, err := ParseRepoPattern(s)
		switch {
		case err != nil:
			errs.add(fmt.Sprintf("%s.repos[%d]", path, i), err.Error())
		case caps.OwnerlessPatterns && rp.Owner != "":
			errs.add(fmt.Sprintf("%s.repos[%d]", path, i), fmt.Sprintf("%q: a Jira pattern is over the site's project keys (APP*, !LEGACY), no owner", s))
		case !caps.OwnerlessPatterns && rp.Owner == "":
			errs.add(fmt.Sprintf("%s.repos[%d]", path, i), fmt.Sprintf("%q: want owner/pattern, e.g. acme/* or !acme/legacy-*", s))
		}
		if !strings.HasPrefix(s, "!") {
			includes++
		}
	}
	if includes == 0 && p.Group == "" && p.Installation == "" {
		errs.add(path+".repos", "needs at least one pattern without \"!\"")
	}
	for i, o := range p.Overrides {
		op := fmt.Sprintf("%s.overrides[%d]", path, i)
		if len(o.Repos) == 0 {
			errs.add(op+".repos", "required")
		}
		for k, s := range o.Repos {
			if rp, err := ParseRepoPattern(s); err != nil {
				errs.add(fmt.Sprintf("%s.repos[%d]", op, k), err.Error())
			} else if rp.Exclude {
				errs.add(fmt.Sprintf("%s.repos[%d]", op, k), "an override names the repositories it is for; \"!\" is for the project's repos")
			}
		}
		if o.Timeout < 0 || o.MaxAttempts < 0 {
			errs.add(op, "timeout and max_attempts must not be negative")
		}
		if o.TriggerLabel != "" && strings.TrimSpace(o.TriggerLabel) == "" {
			errs.add(op+".trigger_label", "must not be blank")
		}
	}
}

// Expand returns the project of the discovered repository at full path
// (owner/name; group/…/project on GitLab): a copy of p with repo set,
// named "<name>.<path>" with the path taken below the group on GitLab and
// "/" written "." (lower case, which the project name rules allow and the
// platforms' case-insensitive paths keep unique), the first matching
// override applied, and "{repo}" in workspace.git.url replaced by the
// path. The copy shares p's maps and secrets, which nothing changes after
// loading.
func (p *Project) Expand(full string) Project {
	q := *p
	q.Repos, q.Overrides, q.Group, q.Installation = nil, nil, "", ""
	q.Repo = full
	rel := full
	if g := p.Group; g != "" && len(full) > len(g) && strings.EqualFold(full[:len(g)+1], g+"/") {
		rel = full[len(g)+1:]
	} else if _, name, ok := strings.Cut(full, "/"); ok {
		rel = name
	}
	q.Name = p.Name + "." + nameSegment(rel)
	q.Pipeline.Command = append([]string(nil), p.Pipeline.Command...)
	q.Workspace.Git.URL = strings.ReplaceAll(p.Workspace.Git.URL, RepoPlaceholder, q.Repo)
	for _, o := range p.Overrides {
		if !matchAny(o.Repos, full) {
			continue
		}
		if o.TriggerLabel != "" {
			q.TriggerLabel = o.TriggerLabel
		}
		if len(o.Command) > 0 {
			q.Pipeline.Command = append([]string(nil), o.Command...)
		}
		if o.Timeout > 0 {
			q.Pipeline.Timeout = o.Timeout
		}
		if o.MaxAttempts > 0 {
			q.Pipeline.MaxAttempts = o.MaxAttempts
		}
		break
	}
	return q
}

// Wants reports whether the project's patterns take the repository at
// full path: some include matches (or, for a group or an installation
// without includes, every repository of it) and no exclude does.
func (p *Project) Wants(full string) bool {
	in, includes := false, false
	for _, s := range p.Repos {
		rp, err := ParseRepoPattern(s)
		if err != nil {
			continue
		}
		if !rp.Exclude {
			includes = true
		}
		if !rp.Match(full) {
			continue
		}
		if rp.Exclude {
			return false
		}
		in = true
	}
	return in || !includes
}

// RepoOwners are what discovery lists: the group on GitLab, the site ("")
// on Jira and for a GitHub App's whole installation, else the distinct owners the include patterns name, in order of
// first appearance.
func (p *Project) RepoOwners() []string {
	if p.Group != "" {
		return []string{p.Group}
	}
	if p.capabilities().OwnerlessPatterns || p.Installation != "" {
		return []string{""} // the site
	}
	var out []string
	for _, s := range p.Repos {
		rp, err := ParseRepoPattern(s)
		if err != nil || rp.Exclude {
			continue
		}
		seen := false
		for _, o := range out {
			seen = seen || strings.EqualFold(o, rp.Owner)
		}
		if !seen {
			out = append(out, rp.Owner)
		}
	}
	return out
}

func matchAny(patterns []string, full string) bool {
	for _, s := range patterns {
		if rp, err := ParseRepoPattern(s); err == nil && !rp.Exclude && rp.Match(full) {
			return true
		}
	}
	return false
}

// checkGitLabGroup validates a group path: "acme" or "acme/platform".
func checkGitLabGroup(g string) error {
	for _, seg := range strings.Split(g, "/") {
		if seg == "" || strings.TrimSpace(seg) != seg || strings.ContainsAny(seg, "#?%*[") {
			return fmt.Errorf("%q: want a group path such as acme or acme/platform", g)
		}
	}
	return nil
}

// nameSegment turns a repository path below its owner into the project
// name's tail: lower case, "/" written ".", and anything else outside the
// project name's a-z 0-9 . _ - (an Azure DevOps project may hold spaces
// and punctuation) written "-". Two paths that meet here clash, which
// discovery refuses.
func nameSegment(rel string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '.'
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, rel)
}
