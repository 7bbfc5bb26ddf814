package trackersim

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// This file is the tracker-neutral issue store. Every dialect (GitHub,
// GitLab, Azure DevOps, Jira) reads and writes the same issues through it,
// so a label written through one dialect is seen by all. Nothing
// here knows about HTTP, JSON shapes or webhooks: mutations report what
// changed as storeEvents and the Sim fans those out to the dialects.

// Store errors. Dialects map them to their own status codes.
var (
	// ErrNotFound means the repository or issue does not exist.
	ErrNotFound = errors.New("sim: not found")
	// ErrPreconditionFailed means a conditional write's version token did not
	// match the issue's current one.
	ErrPreconditionFailed = errors.New("sim: precondition failed")
	// errLabelNotOnIssue means a removal named a label the issue lacks.
	errLabelNotOnIssue = errors.New("sim: label not on issue")
	// errInvalid marks a request the store refuses (empty title, …).
	errInvalid = errors.New("sim: invalid")
)

// Write is one change of an issue's label set, recorded so tests can check
// who wrote what and in which order (for example that exactly one claim
// moved a ticket to enqueued).
type Write struct {
	At     time.Time `json:"at"`
	Repo   string    `json:"repo"`
	Number int       `json:"number"`
	Before []string  `json:"before"`
	After  []string  `json:"after"`
	// Writer is the X-Agentsmith-Writer header if present (the daemon sends
	// its instance_id there with trackersim_writer_header: true), "human"
	// for Go API and page changes, else the request's User-Agent.
	Writer string `json:"writer"`
}

// actor says who performs a mutation: login becomes the webhook sender and
// comment author, writer goes into the Write log.
type actor struct {
	login  string
	writer string
	// changedBy is the System.ChangedBy an Azure DevOps update made with
	// bypassRules=true wrote ("" = login, as every other update records);
	// login stays the authenticated identity, System.AuthorizedAs (ado.go).
	changedBy string
}

// changer is the name a change records as its ChangedBy.
func (a actor) changer() string {
	if a.changedBy != "" {
		return a.changedBy
	}
	return a.login
}

// humanActor is the user behind Go API, control API and page changes.
var humanActor = actor{login: "human", writer: "human"}

// label is a repository label; issues refer to labels by name.
type label struct {
	id          int64
	name        string
	color       string
	description string
}

type comment struct {
	id     int64
	body   string
	author string
	at     time.Time
	edited time.Time // zero until edited (comment_edit.go)
}

// updated is when the comment last changed.
func (c comment) updated() time.Time {
	if c.edited.IsZero() {
		return c.at
	}
	return c.edited
}

type issue struct {
	id          int64
	number      int
	title, body string
	open        bool
	stateReason string
	labels      []string
	// components are a Jira issue's components (SetComponents).
	components []string
	comments   []comment
	reactions  []reaction
	author     string
	createdAt  time.Time
	updatedAt  time.Time
	closedAt   time.Time
	closedBy   string
	// authorizedAs and changedBy are who authenticated the last change and
	// the ChangedBy it recorded (Azure DevOps System.AuthorizedAs and
	// System.ChangedBy); prevAuthorizedAs and prevChangedBy those of the
	// change before it.
	authorizedAs, changedBy         string
	prevAuthorizedAs, prevChangedBy string
	// version changes on every change of the issue; it is drawn from the
	// store-wide counter so a token is never reused, even after A→B→A.
	version int64
	// rev counts the issue's revisions from 1, +1 with every version: Azure
	// DevOps' per-work-item "rev".
	rev int
	// blockedBy are the numbers of the issues of the same repository this
	// one is blocked by (blockers.go).
	blockedBy []int
	// history is every label change, oldest first, for the dialects'
	// history endpoints (GitHub issue events, GitLab resource label
	// events, Azure DevOps updates, Jira changelog).
	history []labelChange
}

// labelChange is one write's label change: who, when, at which revision,
// the labels before and after.
type labelChange struct {
	id            int64
	login         string
	changedBy     string // the ChangedBy the write recorded (actor.changer)
	at            time.Time
	rev           int
	before, after []string
}

type repository struct {
	id        int64
	fullName  string
	createdAt time.Time
	archived  bool // read-only: GitHub writes answer 403 (github_repos.go)
	next      int
	issues    map[int]*issue
	labels    map[string]*label
}

// snapshot is a deep copy of an issue with its labels resolved, safe to use
// after the store's lock is released.
type snapshot struct {
	repoID      int64
	repo        string
	id          int64
	number      int
	title, body string
	open        bool
	stateReason string
	labels      []label
	components  []string
	comments    []comment
	author      string
	createdAt   time.Time
	updatedAt   time.Time
	closedAt    time.Time
	closedBy    string
	version     int64
	rev         int
	// authorizedAs, changedBy and their prev* are the issue's (see issue).
	authorizedAs, changedBy         string
	prevAuthorizedAs, prevChangedBy string
}

func (s snapshot) labelNames() []string {
	out := make([]string, len(s.labels))
	for i, l := range s.labels {
		out[i] = l.name
	}
	return out
}

// storeEvent reports one change the way trackers report them: one event per
// label added or removed, one for the state change, one for an edit.
type storeEvent struct {
	action  string  // opened, edited, closed, reopened, labeled, unlabeled, commented
	label   label   // for labeled / unlabeled
	comment comment // for commented
	changes map[string]string
	sender  string
	issue   snapshot
}

// store holds every repository and issue. sink is called with the lock held,
// in mutation order, so deliveries keep the order of the changes. It gets
// every event of one mutation at once (a dialect such as GitLab sends one
// webhook per write, GitHub one per event); it must not call the store.
type store struct {
	mu    sync.Mutex
	clock func() time.Time
	seq   int64
	repos map[string]*repository
	users map[string]bool // lower-case logins that are user accounts, not organisations
	// orgNumbers holds the next work item id of each Azure DevOps
	// organisation (lower-case) numbered as Azure DevOps numbers: one
	// sequence across its projects (NumberWorkItemsPerOrganisation).
	orgNumbers map[string]*int
	writes     []Write
	// renamed maps a renamed repository's old name to its new one;
	// transferred maps "repo#n" to where the issue went (github_moves.go).
	renamed     map[string]string
	transferred map[string]movedIssue
	sink        func([]storeEvent)
	inter       interleaver
	// refused holds the issues ("repo#n") whose label writes by API
	// clients are refused for good (RefuseLabelWrites).
	refused map[string]bool
	// brokenRules holds the Azure DevOps work items ("repo#n") that break
	// a rule on a field, by the field's reference name
	// (BreakRequiredField).
	brokenRules map[string]string
}

func newStore(clock func() time.Time) *store {
	return &store{clock: clock, repos: map[string]*repository{}}
}

func (st *store) nextID() int64 { st.seq++; return st.seq }

// ensureRepo returns the repository, creating it. Caller holds mu.
func (st *store) ensureRepo(name string) *repository {
	if r, ok := st.repos[name]; ok {
		return r
	}
	r := &repository{id: st.nextID(), fullName: name, createdAt: st.clock(), next: 1,
		issues: map[int]*issue{}, labels: map[string]*label{}}
	st.repos[name] = r
	return r
}

// repoInfo reports a repository's id and creation time.
func (st *store) repoInfo(name string) (id int64, created time.Time, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[name]
	if !ok {
		return 0, time.Time{}, false
	}
	return r.id, r.createdAt, true
}

// labelFor returns the repository's label, creating it with a default
// colour: GitHub creates a label that an issue write names but the
// repository lacks. Caller holds mu.
func (st *store) labelFor(r *repository, name string) *label {
	if l, ok := r.labels[name]; ok {
		return l
	}
	l := &label{id: st.nextID(), name: name, color: defaultColor(name)}
	r.labels[name] = l
	return l
}

func (st *store) snap(r *repository, is *issue) snapshot {
	s := snapshot{repoID: r.id, repo: r.fullName, id: is.id, number: is.number, title: is.title,
		body: is.body, open: is.open, stateReason: is.stateReason, author: is.author,
		createdAt: is.createdAt, updatedAt: is.updatedAt, closedAt: is.closedAt,
		closedBy: is.closedBy, version: is.version, rev: is.rev, comments: slices.Clone(is.comments),
		components:   slices.Clone(is.components),
		authorizedAs: is.authorizedAs, changedBy: is.changedBy, prevAuthorizedAs: is.prevAuthorizedAs, prevChangedBy: is.prevChangedBy}
	s.labels = make([]label, 0, len(is.labels))
	for _, n := range is.labels {
		s.labels = append(s.labels, *st.labelFor(r, n))
	}
	return s
}

func (st *store) emit(evs []storeEvent) {
	if st.sink != nil && len(evs) > 0 {
		st.sink(evs)
	}
}

// createRepo makes an empty repository so it answers before its first issue.
func (st *store) createRepo(name string) (created bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, had := st.repos[name]
	st.ensureRepo(name)
	return !had
}

// create adds an issue, numbered per repository from 1. mustExist refuses
// unknown repositories (the REST path) instead of creating them.
func (st *store) create(repoName, title, body string, labels []string, by actor, mustExist bool) (snapshot, error) {
	if strings.TrimSpace(title) == "" {
		return snapshot{}, fmt.Errorf("create issue in %s: title is empty: %w", repoName, errInvalid)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		if mustExist {
			return snapshot{}, fmt.Errorf("create issue in %s: %w", repoName, ErrNotFound)
		}
		r = st.ensureRepo(repoName)
	}
	now := st.clock()
	is := &issue{id: st.nextID(), number: st.takeNumber(r), title: title, body: body, open: true,
		labels: dedupe(labels), author: by.login, createdAt: now, updatedAt: now,
		authorizedAs: by.login, changedBy: by.changer()}
	is.version, is.rev = st.nextID(), 1
	if len(is.labels) > 0 {
		is.history = append(is.history, labelChange{id: st.nextID(), login: by.login, changedBy: by.changer(), at: now, rev: 1, after: slices.Clone(is.labels)})
	}
	r.issues[is.number] = is
	s := st.snap(r, is)
	evs := []storeEvent{{action: "opened", sender: by.login, issue: s}}
	// GitHub follows "opened" with one "labeled" per initial label.
	for _, l := range s.labels {
		evs = append(evs, storeEvent{action: "labeled", label: l, sender: by.login, issue: s})
	}
	st.emit(evs)
	return s, nil
}

// reserve takes repoName's next issue number for an item the store does not
// keep (a GitLab work item other than an issue) and returns the snapshot
// such an item would have.
func (st *store) reserve(repoName, title string, labels []string) snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := st.ensureRepo(repoName)
	now := st.clock()
	is := &issue{id: st.nextID(), number: st.takeNumber(r), title: title, open: true, labels: dedupe(labels),
		author: "sim", createdAt: now, updatedAt: now, version: st.nextID(), rev: 1}
	return st.snap(r, is)
}

// takeNumber is the next issue number of r: per repository, or per owner
// where the owner numbers per organisation (NumberWorkItemsPerOrganisation).
// Caller holds mu.
func (st *store) takeNumber(r *repository) int {
	owner, _, _ := strings.Cut(r.fullName, "/")
	if next, ok := st.orgNumbers[strings.ToLower(owner)]; ok {
		n := *next
		*next++
		return n
	}
	n := r.next
	r.next++
	return n
}

// get returns a snapshot of one issue.
func (st *store) get(repoName string, number int) (snapshot, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, is, err := st.lookup(repoName, number)
	if err != nil {
		return snapshot{}, err
	}
	return st.snap(r, is), nil
}

func (st *store) lookup(repoName string, number int) (*repository, *issue, error) {
	r, ok := st.repos[repoName]
	if !ok {
		return nil, nil, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	is, ok := r.issues[number]
	if !ok {
		return nil, nil, fmt.Errorf("issue %s#%d: %w", repoName, number, ErrNotFound)
	}
	return r, is, nil
}

// list returns snapshots of a repository's issues in number order.
func (st *store) list(repoName string) ([]snapshot, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return nil, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	out := make([]snapshot, 0, len(r.issues))
	for _, is := range r.issues {
		out = append(out, st.snap(r, is))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	return out, nil
}

// listWhere returns snapshots of the repository's issues keep accepts, in
// number order. keep sees the issue under the store's lock and must only
// read it; filtering before copying keeps a listing of a few matches cheap
// in a repository of 100,000 issues.
func (st *store) listWhere(repoName string, keep func(*issue) bool) ([]snapshot, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return nil, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	var hits []*issue
	for _, is := range r.issues {
		if keep(is) {
			hits = append(hits, is)
		}
	}
	slices.SortFunc(hits, func(a, b *issue) int { return a.number - b.number })
	out := make([]snapshot, 0, len(hits))
	for _, is := range hits {
		out = append(out, st.snap(r, is))
	}
	return out, nil
}

// all returns every issue of every repository, sorted by repo then number.
func (st *store) all() []snapshot {
	st.mu.Lock()
	names := make([]string, 0, len(st.repos))
	for n := range st.repos {
		names = append(names, n)
	}
	st.mu.Unlock()
	sort.Strings(names)
	var out []snapshot
	for _, n := range names {
		l, _ := st.list(n)
		out = append(out, l...)
	}
	return out
}

// repoLabels lists a repository's labels sorted by name.
func (st *store) repoLabels(repoName string) ([]label, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return nil, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	out := make([]label, 0, len(r.labels))
	for _, l := range r.labels {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// createLabel adds a repository label; exists reports a name already
// taken, in any case when foldCase (GitHub: "blocked" next to "Blocked" is
// 422 already_exists, hackebrot/labels#15).
func (st *store) createLabel(repoName, name, color, description string, foldCase bool) (l label, exists bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return label{}, false, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	if foldCase {
		name = st.repoSpellings(r, []string{name})[0]
	}
	if old, ok := r.labels[name]; ok {
		return *old, true, nil
	}
	nl := st.labelFor(r, name)
	if color != "" {
		nl.color = strings.TrimPrefix(color, "#")
	}
	nl.description = description
	return *nl, false, nil
}

// spellings is repoSpellings for a repository by name; names unchanged
// when it does not exist.
func (st *store) spellings(repoName string, names []string) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return names
	}
	return st.repoSpellings(r, names)
}

// repoSpellings maps each name to the repository's label that is it but for
// case, if there is one, else to the first spelling of it in names. Caller
// holds mu.
func (st *store) repoSpellings(r *repository, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if _, ok := r.labels[n]; ok {
			continue
		}
		for have := range r.labels {
			if strings.EqualFold(have, n) {
				out[i] = have
				break
			}
		}
		if out[i] == n {
			if j := slices.IndexFunc(out[:i], func(o string) bool { return strings.EqualFold(o, n) }); j >= 0 {
				out[i] = out[j]
			}
		}
	}
	return out
}

// update describes one write to an issue. Nil fields are left alone. Labels
// replaces the whole set; Add and Remove edit it; Comment appends a comment.
type update struct {
	Title, Body *string
	Open        *bool
	StateReason *string
	Labels      *[]string
	Add         []string
	Remove      []string
	Comment     *string
	Components  *[]string
	// FoldCase names labels in Add and Labels as GitHub does: a name that
	// is a repository label but for case means that label, in the
	// repository's spelling (platforms.SameLabel cites the sources), and
	// two spellings in one write are one label. Remove stays exact.
	FoldCase bool
	// RemoveIfPresent removes the labels of Remove the issue has and
	// ignores the others, instead of refusing the write (GitHub's
	// removeLabelsFromLabelable, github_graphql.go).
	RemoveIfPresent bool
}

// precondition decides, under the store's lock, whether a conditional write
// may proceed given the issue's current version. Nil means unconditional.
type precondition func(version int64) bool

// apply performs u atomically: check cond, change the issue, bump its version
// if anything changed, log a Write for a label change and emit events. It
// returns the issue as written and the new comment's id (0 if none).
func (st *store) apply(repoName string, number int, cond precondition, by actor, u update) (snapshot, int64, error) {
	st.inter.before(repoName, number, by)
	st.mu.Lock()
	defer st.mu.Unlock()
	r, is, err := st.lookup(repoName, number)
	if err != nil {
		return snapshot{}, 0, err
	}
	if cond != nil && !cond(is.version) {
		return snapshot{}, 0, fmt.Errorf("issue %s#%d: %w", repoName, number, ErrPreconditionFailed)
	}
	if st.refusedLabels(repoName, number, by, u) {
		return snapshot{}, 0, fmt.Errorf("issue %s#%d: %w", repoName, number, errLabelsRefused)
	}
	if u.Title != nil && strings.TrimSpace(*u.Title) == "" {
		return snapshot{}, 0, fmt.Errorf("issue %s#%d: title is empty: %w", repoName, number, errInvalid)
	}
	for _, name := range u.Remove {
		if !u.RemoveIfPresent && !slices.Contains(is.labels, name) {
			return snapshot{}, 0, fmt.Errorf("issue %s#%d: label %q: %w", repoName, number, name, errLabelNotOnIssue)
		}
	}

	if u.FoldCase {
		u.Add = st.repoSpellings(r, u.Add)
		if u.Labels != nil {
			ls := st.repoSpellings(r, *u.Labels)
			u.Labels = &ls
		}
	}

	now := st.clock()
	var events []storeEvent
	changed := false
	edits := map[string]string{}
	if u.Title != nil && *u.Title != is.title {
		edits["title"], is.title = is.title, *u.Title
	}
	if u.Body != nil && *u.Body != is.body {
		edits["body"], is.body = is.body, *u.Body
	}
	if u.Components != nil && !slices.Equal(*u.Components, is.components) {
		edits["components"], is.components = strings.Join(is.components, ","), slices.Clone(*u.Components)
	}
	if len(edits) > 0 {
		changed = true
		events = append(events, storeEvent{action: "edited", changes: edits})
	}
	if u.Open != nil && *u.Open != is.open {
		changed = true
		is.open = *u.Open
		if is.open {
			is.stateReason, is.closedAt, is.closedBy = "reopened", time.Time{}, ""
			events = append(events, storeEvent{action: "reopened"})
		} else {
			is.stateReason, is.closedAt, is.closedBy = "completed", now, by.login
			if u.StateReason != nil && *u.StateReason != "" {
				is.stateReason = *u.StateReason
			}
			events = append(events, storeEvent{action: "closed"})
		}
	}

	before := slices.Clone(is.labels)
	after := before
	if u.Labels != nil {
		after = dedupe(*u.Labels)
	}
	if len(u.Remove) > 0 {
		after = slices.DeleteFunc(slices.Clone(after), func(l string) bool { return slices.Contains(u.Remove, l) })
	}
	if len(u.Add) > 0 {
		after = dedupe(append(slices.Clone(after), u.Add...))
	}
	if !slices.Equal(before, after) {
		changed = true
		is.labels = after
		for _, l := range before {
			if !slices.Contains(after, l) {
				events = append(events, storeEvent{action: "unlabeled", label: *st.labelFor(r, l)})
			}
		}
		for _, l := range after {
			if !slices.Contains(before, l) {
				events = append(events, storeEvent{action: "labeled", label: *st.labelFor(r, l)})
			}
		}
		is.history = append(is.history, labelChange{id: st.nextID(), login: by.login, changedBy: by.changer(), at: now, rev: is.rev + 1,
			before: slices.Clone(before), after: slices.Clone(after)})
		st.writes = append(st.writes, Write{At: now, Repo: repoName, Number: number,
			Before: nonNil(before), After: nonNil(slices.Clone(after)), Writer: by.writer})
	}
	var commentID int64
	if u.Comment != nil {
		changed = true
		commentID = st.nextID()
		c := comment{id: commentID, body: *u.Comment, author: by.login, at: now}
		is.comments = append(is.comments, c)
		// Every platform sends a comment webhook for a new comment, the
		// daemon's own included (dialect.go splitComment).
		events = append(events, storeEvent{action: actionCommented, comment: c})
	}
	if changed {
		is.version = st.nextID()
		is.rev++
		is.updatedAt = now
		is.prevAuthorizedAs, is.prevChangedBy = is.authorizedAs, is.changedBy
		is.authorizedAs, is.changedBy = by.login, by.changer()
	}
	s := st.snap(r, is)
	for i := range events {
		events[i].sender, events[i].issue = by.login, s
	}
	st.emit(events)
	return s, commentID, nil
}

// labelHistory returns a copy of an issue's label changes, oldest first.
func (st *store) labelHistory(repoName string, number int) ([]labelChange, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, is, err := st.lookup(repoName, number)
	if err != nil {
		return nil, err
	}
	out := make([]labelChange, len(is.history))
	copy(out, is.history)
	return out, nil
}

// writeLog returns a copy of the Write log.
func (st *store) writeLog() []Write {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]Write, len(st.writes))
	for i, w := range st.writes {
		w.Before, w.After = slices.Clone(w.Before), slices.Clone(w.After)
		out[i] = w
	}
	return out
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// defaultColor gives lifecycle labels distinct colours on the page and in
// label JSON; other labels get GitHub's default grey.
func defaultColor(name string) string {
	switch name {
	case "agent-smith":
		return "7057ff"
	case "agent-smith:pending":
		return "c5def5"
	case "agent-smith:enqueued":
		return "fbca04"
	case "agent-smith:in-progress":
		return "1d76db"
	case "agent-smith:done":
		return "0e8a16"
	case "agent-smith:failed":
		return "d73a4a"
	}
	if strings.HasPrefix(name, "agent-smith") {
		return "bfd4f2"
	}
	return "ededed"
}

// issueByID finds an issue by its store-wide id (GitHub's node id carries
// it, github_graphql.go).
func (st *store) issueByID(id int64) (repo string, number int, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for name, r := range st.repos {
		for n, is := range r.issues {
			if is.id == id {
				return name, n, true
			}
		}
	}
	return "", 0, false
}

// labelByID finds a label of repoName by its id.
func (st *store) labelByID(repoName string, id int64) (label, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return label{}, false
	}
	for _, l := range r.labels {
		if l.id == id {
			return *l, true
		}
	}
	return label{}, false
}

// renameLabel renames a repository label in place, keeping its id, and
// with it every issue's use of it: GitHub's "Update a label" with new_name
// answers the same label, id and node_id unchanged, under the new name
// (https://docs.github.com/en/rest/issues/labels#update-a-label). exists
// reports newName taken, in any case, by another label (422
// already_exists, as on create).
func (st *store) renameLabel(repoName, oldName, newName string) (l label, exists bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repoName]
	if !ok {
		return label{}, false, fmt.Errorf("repository %s: %w", repoName, ErrNotFound)
	}
	old, ok := r.labels[oldName]
	if !ok {
		return label{}, false, fmt.Errorf("label %s: %w", oldName, ErrNotFound)
	}
	for have := range r.labels {
		if have != oldName && strings.EqualFold(have, newName) {
			return *r.labels[have], true, nil
		}
	}
	delete(r.labels, oldName)
	old.name = newName
	r.labels[newName] = old
	for _, is := range r.issues {
		for i, n := range is.labels {
			if n == oldName {
				is.labels[i] = newName
			}
		}
	}
	return *old, false, nil
}
