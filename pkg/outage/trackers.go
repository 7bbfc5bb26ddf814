package outage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Project is one project's tracker as its outage lines name it.
type Project struct {
	Name, Platform, BaseURL string
	// Secret is the setting that holds the project's credential and its
	// source ("projects[app].token env:GITHUB_TOKEN"): what an operator
	// fixes when the tracker refuses it. Never the credential itself.
	Secret string
}

// Trackers follows, per project, two outages seen on its tracker calls
// (Trackers.Observer): the tracker unreachable (refused or reset
// connections, timeouts, 5xx answers) and its token refused (401: invalid,
// expired or revoked). A 403 is left to the per-ticket refusal rule
// (lifecycle.Refusals): trackers answer it for a missing permission on one
// resource and for rate limits, with a token that is otherwise fine.
type Trackers struct {
	reminder time.Duration
	now      func() time.Time
	log      *zap.Logger

	mu       sync.Mutex
	projects map[string]*projectOutages
}

type projectOutages struct {
	host         string // of BaseURL: tracker errors name it
	reach, token *Tracker
}

// NewTrackers follows tracker outages, logging to log (which must not be
// folded by FoldTrackers) every reminder (DefaultReminder if 0) on the
// clock now (wallclock.Now if nil).
func NewTrackers(reminder time.Duration, now func() time.Time, log *zap.Logger) *Trackers {
	return &Trackers{reminder: reminder, now: now, log: log, projects: map[string]*projectOutages{}}
}

// Observer is the call observer of p's tracker transport: every call it
// makes tells whether the tracker and the token are failing. A project
// met again (discovery) keeps its outages.
func (ts *Trackers) Observer(p Project) trackerhttp.CallObserver {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	po := ts.projects[p.Name]
	if po == nil {
		fields := []zap.Field{zap.String("project", p.Name), zap.String("platform", p.Platform)}
		po = &projectOutages{
			reach: New(Config{What: "tracker", Where: p.BaseURL, Fields: fields, Reminder: ts.reminder, Now: ts.now, Log: ts.log,
				Meanwhile: "the project's tickets are not claimed or moved until it answers; retrying"}),
			token: New(Config{What: "tracker token", Where: p.Secret, Failing: "refused", Again: "accepted again", Fields: fields,
				Reminder: ts.reminder, Now: ts.now, Log: ts.log,
				Meanwhile: "it is invalid, expired or revoked: replace the credential named in where and restart the replica"}),
		}
		if u, err := url.Parse(p.BaseURL); err == nil {
			po.host = u.Host
		}
		ts.projects[p.Name] = po
	}
	return callObserver{po}
}

type callObserver struct{ po *projectOutages }

func (o callObserver) ObserveCall(c trackerhttp.Call) {
	switch {
	case c.Status == 0:
		// A cancelled call (shutdown, a caller gone) or a fenced-off
		// write says nothing about the tracker.
		if Connection(c.Err) || errors.Is(c.Err, context.DeadlineExceeded) {
			o.po.reach.Fail(c.Err)
		}
	case c.Status >= 500:
		o.po.reach.Fail(fmt.Errorf("%s answered %d %s", c.Method, c.Status, http.StatusText(c.Status)))
	default:
		o.po.reach.OK()
		if c.Status == http.StatusUnauthorized {
			o.po.token.Fail(fmt.Errorf("%s answered %d %s", c.Method, c.Status, http.StatusText(c.Status)))
		} else if c.Status < 400 {
			o.po.token.OK()
		}
	}
}

// downHost is a host whose project is under an outage: its tracker's
// (reach) or only its token's.
type downHost struct {
	host  string
	reach bool
}

// down is the projects under an outage, by name, and their hosts.
func (ts *Trackers) down() (names map[string]bool, hosts []downHost) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for name, po := range ts.projects {
		reach, token := po.reach.Down(), po.token.Down()
		if !reach && !token {
			continue
		}
		if names == nil {
			names = map[string]bool{}
		}
		names[name] = true
		if po.host != "" {
			hosts = append(hosts, downHost{po.host, reach})
		}
	}
	return names, hosts
}

// FoldTrackers wraps core so that, while a project's tracker or token
// outage is under way, a warning or error line with an error field is
// written at debug when it names that project (a "project" field) or its
// error names the project's tracker host (the housekeeping cycles name no
// project) and, for a token outage, is a 401: another project's token on
// the same host (api.github.com) keeps its own lines. The loops keep
// their lines for debugging and the operator reads the outage's lines.
// Folded lines do not feed the outage; only the tracker calls do
// (Observer).
func FoldTrackers(core zapcore.Core, ts *Trackers) zapcore.Core {
	return &trackerFold{Core: core, ts: ts}
}

type trackerFold struct {
	zapcore.Core
	ts      *Trackers
	project string // from With
}

func (c *trackerFold) With(fields []zapcore.Field) zapcore.Core {
	return &trackerFold{Core: c.Core.With(fields), ts: c.ts, project: projectField(fields, c.project)}
}

func (c *trackerFold) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.Level >= zapcore.WarnLevel && c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return c.Core.Check(ent, ce)
}

func (c *trackerFold) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if ent.Level >= zapcore.WarnLevel && c.folds(fields) {
		if !c.Core.Enabled(zapcore.DebugLevel) {
			return nil
		}
		ent.Level = zapcore.DebugLevel
	}
	return c.Core.Write(ent, fields)
}

func (c *trackerFold) folds(fields []zapcore.Field) bool {
	var err error
	for _, f := range fields {
		if e, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType && e != nil {
			err = e
			break
		}
	}
	if err == nil {
		return false
	}
	names, hosts := c.ts.down()
	if names == nil {
		return false
	}
	project := projectField(fields, c.project)
	if names[project] {
		return true
	}
	if project != "" {
		// A line that names its project is that project's: another
		// project's outage on the same host does not fold it.
		return false
	}
	msg := err.Error()
	for _, h := range hosts {
		if strings.Contains(msg, h.host) && (h.reach || platforms.RejectedStatus(err) == http.StatusUnauthorized) {
			return true
		}
	}
	return false
}

// projectField is the last "project" string among fields, or def.
func projectField(fields []zapcore.Field, def string) string {
	for _, f := range fields {
		if f.Key == "project" && f.Type == zapcore.StringType {
			def = f.String
		}
	}
	return def
}
