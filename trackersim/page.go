package trackersim

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// The page at "/" lets a person watch lifecycle labels change while the
// daemon works, and add the trigger label with one click. It is
// server-rendered and refreshes itself every two seconds.

type pageLabel struct {
	Name, Color, Text string
}

type pageIssue struct {
	Anchor, Repo, Title, Body, AddURL string
	Number                            int
	Open                              bool
	// HasTrigger: the issue carries the trigger label, so the page offers
	// no button to add it.
	HasTrigger bool
	Labels     []pageLabel
	Comments   []Comment
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>trackersim</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#1f2328}
.issue{border:1px solid #d0d7de;border-radius:6px;padding:.8em 1em;margin:.8em 0}
.issue:target{outline:3px solid #0969da}
.chip{display:inline-block;border-radius:2em;padding:.1em .7em;margin:0 .3em .3em 0;font-size:.85em;font-weight:600}
.state{font-size:.85em;padding:.1em .6em;border-radius:2em;color:#fff}
.open{background:#1f883d}.closed{background:#8250df}
pre{background:#f6f8fa;padding:.5em;white-space:pre-wrap;margin:.3em 0}
.meta{color:#656d76;font-size:.85em}
form{display:inline}
</style></head><body>
<h1>trackersim</h1>
<p class="meta">API base URLs: {{range .APIs}}<code>{{.}}</code> {{end}}&middot; {{len .Issues}} issues &middot; refreshes every 2 s</p>
{{range .Issues}}
<div class="issue" id="{{.Anchor}}">
 <div><span class="state {{if .Open}}open{{else}}closed{{end}}">{{if .Open}}open{{else}}closed{{end}}</span>
 <strong>{{.Repo}}#{{.Number}}</strong> {{.Title}}
 {{if not .HasTrigger}}<form method="post" action="{{.AddURL}}"><button type="submit">add trigger label</button></form>{{end}}</div>
 <div style="margin-top:.4em">{{range .Labels}}<span class="chip" style="background:#{{.Color}};color:{{.Text}}">{{.Name}}</span>{{end}}</div>
 {{if .Body}}<pre>{{.Body}}</pre>{{end}}
 {{range .Comments}}<div class="meta">{{.Author}} commented at {{.At.Format "15:04:05"}}</div><pre>{{.Body}}</pre>{{end}}
</div>
{{else}}<p>No issues yet. Create one: <code>curl -d '{"repo":"demo/app","title":"hello","labels":["agent-smith"]}' {{.Base}}/sim/issues</code></p>
{{end}}
</body></html>`))

func (s *Sim) pageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.page)
}

func (s *Sim) page(w http.ResponseWriter, r *http.Request) {
	base := s.requestBase(r)
	filter := r.URL.Query().Get("repo")
	trigger := r.URL.Query().Get("label")
	if trigger == "" {
		trigger = "agent-smith"
	}
	var issues []pageIssue
	for _, sn := range s.store.all() {
		if filter != "" && sn.repo != filter {
			continue
		}
		pi := pageIssue{Anchor: issueAnchor(sn.repo, sn.number), Repo: sn.repo, Number: sn.number,
			Title: sn.title, Body: sn.body, Open: sn.open,
			AddURL: "/sim/labels?" + url.Values{"repo": {sn.repo}, "number": {strconv.Itoa(sn.number)},
				"label": {trigger}}.Encode()}
		for _, l := range sn.labels {
			pi.Labels = append(pi.Labels, pageLabel{Name: l.name, Color: l.color, Text: textColor(l.color)})
			// Label names compare case-insensitively, as on the trackers.
			pi.HasTrigger = pi.HasTrigger || strings.EqualFold(l.name, trigger)
		}
		for _, c := range sn.comments {
			pi.Comments = append(pi.Comments, Comment{Body: c.body, Author: c.author, At: c.at})
		}
		issues = append(issues, pi)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	err := pageTmpl.Execute(w, map[string]any{"Issues": issues, "API": base + "/github/", "APIs": s.apiBases(base), "Base": base})
	if err != nil {
		s.log.Warn("render page", zap.Error(err))
	}
}

// textColor picks black or white text for a label colour by its luminance,
// as GitHub's label chips do.
func textColor(hex string) string {
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || len(hex) != 6 {
		return "#1f2328"
	}
	r, g, b := float64(v>>16&0xff), float64(v>>8&0xff), float64(v&0xff)
	if 0.299*r+0.587*g+0.114*b > 150 {
		return "#1f2328"
	}
	return "#ffffff"
}
