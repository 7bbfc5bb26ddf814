package platforms

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// Descriptor is everything the rest of the daemon knows about one tracker
// platform: config validates a project by it, internal/projects builds the
// tracker with it, discovery lists repositories with it. Each platform
// package registers its own in its descriptor.go, so adding a platform is
// one package and no switch elsewhere (guard_test.go keeps switches on
// platform names out of the rest of the code).
type Descriptor struct {
	// Name is the platform as configs, Refs and webhook paths spell it.
	Name string
	// DefaultBaseURL is used when a project's base_url is empty; "" makes
	// base_url required (every Jira site has its own URL).
	DefaultBaseURL string
	// CheckRepo validates a project's repo field; nil accepts any
	// non-empty value. Its error text is shown to the operator after
	// "repo: ".
	CheckRepo func(repo string) error
	// CheckScope validates a search scope configured instead of repo
	// (Jira's jira.jql), its messages read after the field's name; nil
	// means the platform has no such scope.
	CheckScope func(scope string) error
	// RateLimits is how the platform's API signals rate limits, for an HTTP
	// client a caller builds itself (the daemon's instrumented one); the
	// platform's own default client already uses it.
	RateLimits trackerhttp.RateLimits
	// New builds the tracker of one project, the platform's webhook
	// decoder (which respells lifecycle labels as TrackerOptions.Lifecycle
	// lists them) and the project's locator on the platform, what webhook
	// payloads name it by. It makes no network call.
	New func(opts TrackerOptions) (Tracker, WebhookDecoder, string, error)
	// List lists the repositories (GitLab projects, Azure DevOps projects,
	// Jira project keys) owner holds, for projects configured by pattern;
	// nil means the platform has no repository discovery.
	List func(ctx context.Context, opts TrackerOptions, owner string) ([]ListedRepo, error)
	// CommentMarkup is how the platform's tracker reads the text of the
	// daemon's comments, which decides how pipeline text in them (a
	// result's summary and links) is escaped.
	CommentMarkup Markup
	// NoWebhookTest says, for a platform whose tracker sends no test
	// delivery (is no WebhookTester), why check --webhook cannot prove the
	// webhook's URL and secret; "" gives a generic reason.
	NoWebhookTest string
	// MachineAccount says what a user name is when it names an account
	// only a token acts as, never a person (GitHub "a GitHub App's bot
	// account" for <slug>[bot]); "" for anyone else. Config refuses such
	// an account as an approver. nil: the platform's names cannot tell.
	MachineAccount func(user string) string
	// LabelLimit is the longest label (Azure DevOps: tag) name the
	// platform takes, in characters (Unicode code points); a longer one
	// is refused on every write (GitHub: 422 "name is too long (maximum
	// is 50 characters)"). Config refuses a label prefix, trigger label or
	// stage name that makes a longer label. 0: no known limit.
	LabelLimit int
	// TokenVars are the environment variables the platform's CLIs read a
	// token from (GitHub GH_TOKEN, GITHUB_TOKEN): check asks the tracker
	// who a pipeline secret of one of these names is, and sends no other
	// secret there. nil: check does not ask.
	TokenVars []string
	// Capabilities are what config accepts for the platform's projects.
	Capabilities
}

// Markup is how a tracker reads comment text.
type Markup int

const (
	// MarkupMarkdown: the tracker renders comments as Markdown (GitHub,
	// GitLab, Azure DevOps), so pipeline text has every character
	// Markdown could read as markup escaped and its links are Markdown
	// links. It is the zero value.
	MarkupMarkdown Markup = iota
	// MarkupJiraWiki: the tracker takes plain text and turns it into Jira
	// wiki markup or ADF itself, escaping it there (platforms/jira/adf.go),
	// so only Jira's mention and code-fence forms are broken in pipeline
	// text and a link is written as its title and URL.
	MarkupJiraWiki
)

// Capabilities are the features a platform has or lacks, where config or
// the receiver decide on them.
type Capabilities struct {
	// Reactions: the platform has issue reactions (projects[].reactions).
	Reactions bool
	// Teams: the platform's tracker can tell team or group membership
	// (TeamChecker), so trigger.allow.teams can admit anyone.
	Teams bool
	// FoldLocator: webhook payloads may spell the project's locator in
	// another case than the config does (GitHub and GitLab paths are
	// case-insensitive), so the receiver routes on the folded locator.
	FoldLocator bool
	// Groups: discovery lists a group named by a project's group field
	// (GitLab, subgroups included) rather than the owners of its repos
	// patterns.
	Groups bool
	// GitHubApp: a project may authenticate as a GitHub App installation
	// (github_app) and list every repository of it (installation: all).
	GitHubApp bool
	// OwnerlessPatterns: repos patterns are over the site's project keys
	// (Jira's APP*), not owner/pattern, and discovery lists the site.
	OwnerlessPatterns bool
	// SpacelessLabels: a label is one word (Jira), so config refuses a
	// trigger label, label prefix or pipeline label with a space: the
	// tracker would refuse every write of it and no search would match it.
	SpacelessLabels bool
	// JiraSection: the platform's projects take the jira: section
	// (deployment, email, a jql scope); config refuses it elsewhere.
	JiraSection bool
	// GitHubAPI: the platform's projects take the github: section (api:
	// rest or graphql for label writes); config refuses it elsewhere.
	GitHubAPI bool
}

// TrackerOptions is what a project's configuration gives a platform's
// constructor and lister; each platform reads the fields it has a use for.
type TrackerOptions struct {
	BaseURL string // "" means Descriptor.DefaultBaseURL
	Repo    string // the project's locator as configured ("owner/repo")
	// Scope is a search scope instead of Repo (Jira's jira.jql).
	Scope   string
	Project string // the configured project name
	Token   string
	// App, when set, authenticates as a GitHub App installation instead of
	// Token.
	App *AppCredentials
	// Email and Deployment ("cloud", "datacenter") are Jira's.
	Email, Deployment string
	// Installation lists every repository of App's installation instead of
	// an owner's.
	Installation bool
	// HTTPClient, when not nil, carries every request (the daemon's
	// instrumented client); nil builds the platform's default.
	HTTPClient *http.Client
	Logger     *zap.Logger // never nil when a Descriptor's New is called
	// Writer tags the default client's writes for trackersim's write log;
	// "" for a real tracker.
	Writer      string
	LabelPrefix string
	// Spellings are the labels the daemon writes and reads as configured
	// (the trigger label, then the lifecycle labels); Lifecycle is the
	// lifecycle labels alone, which the platform's webhook decoder (one for
	// every project of the platform) respells.
	Spellings, Lifecycle []string
	// API is how the tracker writes labels where the platform has a choice
	// (GitHub: "rest" or "graphql").
	API string
	// Locker serialises label writes where the platform has no
	// conditional write (Jira).
	Locker Locker
}

// AppCredentials are a GitHub App installation's.
type AppCredentials struct {
	AppID, InstallationID int64
	PrivateKey            []byte // PEM
}

// ListedRepo is one repository a Descriptor's List found.
type ListedRepo struct {
	Path string // owner/name; group/…/project on GitLab
	// Archived (or disabled, or not yet usable) repositories refuse writes
	// and are left out.
	Archived bool
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Descriptor{}
)

// Register adds d to the platforms a project may name. Platform packages
// call it from init; a second registration of one name is a programming
// error and panics.
func Register(d Descriptor) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if d.Name == "" {
		panic("platforms: Register of a descriptor without a name")
	}
	if _, dup := registry[d.Name]; dup {
		panic(fmt.Sprintf("platforms: platform %q registered twice", d.Name))
	}
	registry[d.Name] = d
}

// Unregister removes a platform; tests that register one of their own
// call it in their cleanup.
func Unregister(name string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, name)
}

// Lookup is the descriptor of the platform called name.
func Lookup(name string) (Descriptor, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	d, ok := registry[name]
	return d, ok
}

// Names lists the registered platforms, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}
