package trackersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// A WIQL subset (https://learn.microsoft.com/azure/devops/boards/queries/wiql-syntax):
//
//	SELECT [field] {, [field]} FROM WorkItems
//	[WHERE cond {AND cond}]
//	[ORDER BY [System.Id] [ASC|DESC]]
//
// where cond is one of
//
//	[System.TeamProject] = @project | '<name>'
//	[System.Tags] CONTAINS '<tag>'         (a whole tag, case-insensitive)
//	[System.State] = | <> '<state>'
//	[System.State] [NOT] IN ('<state>' {, '<state>'})
//
// Keywords are case-insensitive and '' escapes a quote. That covers the
// daemon's ListOpen query; anything else is refused with 400 and a message
// naming what the sim does not support, rather than answered wrongly.

// wiqlQuery is a parsed query: a conjunction of predicates.
type wiqlQuery struct {
	conds []func(sn snapshot, project string) bool
	// project is set when a condition scopes the query to one project,
	// atProject when that condition is the @project macro.
	project, atProject bool
	descending         bool
}

type wiqlToken struct {
	kind byte // 'f' [field], 's' 'string', 'm' @macro, 'w' word, 'p' punctuation
	text string
}

func wiqlTokens(q string) ([]wiqlToken, error) {
	var out []wiqlToken
	rs := []rune(q)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '[':
			j := slices.Index(rs[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated field reference at %d", i)
			}
			out = append(out, wiqlToken{'f', string(rs[i+1 : i+j])})
			i += j + 1
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(rs) {
					return nil, fmt.Errorf("unterminated string at %d", i)
				}
				if rs[j] == '\'' {
					if j+1 < len(rs) && rs[j+1] == '\'' {
						b.WriteRune('\'')
						j++
						continue
					}
					break
				}
				b.WriteRune(rs[j])
			}
			out = append(out, wiqlToken{'s', b.String()})
			i = j + 1
		case c == '(' || c == ')' || c == ',' || c == '=':
			out = append(out, wiqlToken{'p', string(c)})
			i++
		case c == '<' && i+1 < len(rs) && rs[i+1] == '>':
			out = append(out, wiqlToken{'p', "<>"})
			i += 2
		case c == '@' || unicode.IsLetter(c):
			j := i + 1
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_' || rs[j] == '.') {
				j++
			}
			kind := byte('w')
			if c == '@' {
				kind = 'm'
			}
			out = append(out, wiqlToken{kind, string(rs[i:j])})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q at %d", c, i)
		}
	}
	return out, nil
}

type wiqlParser struct {
	toks []wiqlToken
	pos  int
}

func (p *wiqlParser) peek() wiqlToken {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return wiqlToken{}
}

func (p *wiqlParser) next() wiqlToken { t := p.peek(); p.pos++; return t }

// word consumes keyword w (case-insensitive) if it is next.
func (p *wiqlParser) word(w string) bool {
	if t := p.peek(); t.kind == 'w' && strings.EqualFold(t.text, w) {
		p.pos++
		return true
	}
	return false
}

func (p *wiqlParser) punct(s string) bool {
	if t := p.peek(); t.kind == 'p' && t.text == s {
		p.pos++
		return true
	}
	return false
}

func (p *wiqlParser) expectWord(w string) error {
	if !p.word(w) {
		return fmt.Errorf("expected %s, found %q", strings.ToUpper(w), p.peek().text)
	}
	return nil
}

func (p *wiqlParser) str() (string, error) {
	t := p.next()
	if t.kind != 's' {
		return "", fmt.Errorf("expected a string literal, found %q", t.text)
	}
	return t.text, nil
}

// parseWiql parses q into a query, or says what it does not support.
func parseWiql(q string) (*wiqlQuery, error) {
	toks, err := wiqlTokens(q)
	if err != nil {
		return nil, err
	}
	p := &wiqlParser{toks: toks}
	if err := p.expectWord("SELECT"); err != nil {
		return nil, err
	}
	for {
		if t := p.next(); t.kind != 'f' {
			return nil, fmt.Errorf("expected a [field] in the SELECT list, found %q", t.text)
		}
		if !p.punct(",") {
			break
		}
	}
	if err := p.expectWord("FROM"); err != nil {
		return nil, err
	}
	if err := p.expectWord("WorkItems"); err != nil {
		return nil, fmt.Errorf("only FROM WorkItems is supported: %w", err)
	}
	out := &wiqlQuery{}
	if p.word("WHERE") {
		for {
			if err := p.cond(out); err != nil {
				return nil, err
			}
			if !p.word("AND") {
				break
			}
		}
	}
	if p.word("ORDER") {
		if err := p.expectWord("BY"); err != nil {
			return nil, err
		}
		if t := p.next(); t.kind != 'f' || !strings.EqualFold(t.text, "System.Id") {
			return nil, fmt.Errorf("only ORDER BY [System.Id] is supported, found %q", t.text)
		}
		if p.word("DESC") {
			out.descending = true
		} else {
			p.word("ASC")
		}
	}
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("unsupported %q after the query (only AND-ed conditions are supported)", p.peek().text)
	}
	return out, nil
}

// cond parses one condition into q.
func (p *wiqlParser) cond(q *wiqlQuery) error {
	f := p.next()
	if f.kind != 'f' {
		return fmt.Errorf("expected a [field] condition, found %q", f.text)
	}
	switch strings.ToLower(f.text) {
	case "system.teamproject":
		if !p.punct("=") {
			return fmt.Errorf("only [System.TeamProject] = is supported")
		}
		t := p.next()
		var match func(sn snapshot, project string) bool
		switch {
		case t.kind == 'm' && strings.EqualFold(t.text, "@project"):
			q.atProject = true
			match = func(sn snapshot, project string) bool { return strings.EqualFold(adoProject(sn.repo), project) }
		case t.kind == 's':
			name := t.text
			match = func(sn snapshot, _ string) bool { return strings.EqualFold(adoProject(sn.repo), name) }
		default:
			return fmt.Errorf("[System.TeamProject] must equal @project or a string, found %q", t.text)
		}
		q.project = true
		q.conds = append(q.conds, match)
	case "system.tags":
		if !p.word("CONTAINS") {
			return fmt.Errorf("only [System.Tags] CONTAINS '<tag>' is supported")
		}
		tag, err := p.str()
		if err != nil {
			return err
		}
		q.conds = append(q.conds, func(sn snapshot, _ string) bool {
			return slices.ContainsFunc(sn.labelNames(), func(l string) bool { return strings.EqualFold(l, tag) })
		})
	case "system.state":
		switch {
		case p.punct("="), p.punct("<>"):
			neg := p.toks[p.pos-1].text == "<>"
			s, err := p.str()
			if err != nil {
				return err
			}
			q.conds = append(q.conds, func(sn snapshot, _ string) bool { return strings.EqualFold(adoState(sn), s) != neg })
		default:
			neg := p.word("NOT")
			if !p.word("IN") {
				return fmt.Errorf("[System.State] supports =, <>, IN and NOT IN")
			}
			if !p.punct("(") {
				return fmt.Errorf("expected ( after IN")
			}
			var states []string
			for {
				s, err := p.str()
				if err != nil {
					return err
				}
				states = append(states, s)
				if p.punct(")") {
					break
				}
				if !p.punct(",") {
					return fmt.Errorf("expected , or ) in the IN list, found %q", p.peek().text)
				}
			}
			q.conds = append(q.conds, func(sn snapshot, _ string) bool {
				in := slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, adoState(sn)) })
				return in != neg
			})
		}
	default:
		return fmt.Errorf("the sim does not support conditions on [%s] (supported: System.TeamProject, System.Tags, System.State)", f.text)
	}
	return nil
}

// adoQueryByWiql is "Wiql - Query By Wiql": {"query": ...}, optional $top.
// The result lists work item references; the client reads the items with
// workitemsbatch. A query matching more than 20,000 items is refused, as
// Azure DevOps refuses it.
func (s *Sim) adoQueryByWiql(w http.ResponseWriter, r *http.Request, c *adoCall) {
	var req struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Query) == "" {
		adoError(w, http.StatusBadRequest, "VssPropertyValidationException", "The request body must be {\"query\": \"<WIQL>\"}.")
		return
	}
	q, err := parseWiql(req.Query)
	if err != nil {
		adoError(w, http.StatusBadRequest, "WiqlSyntaxException", "TF51006: The query statement is not supported by the sim: "+err.Error())
		return
	}
	if c.repo == "" && q.atProject {
		adoError(w, http.StatusBadRequest, "WiqlSyntaxException", "TF51011: The @project macro needs a project in the request's route.")
		return
	}
	if c.repo == "" && !s.orgNumbered(c.org) {
		adoError(w, http.StatusBadRequest, "VssServiceException", adoOrgLevelRefusal)
		return
	}
	project := adoProject(c.repo)
	repos := []string{c.repo}
	if !q.project || c.repo == "" {
		repos = s.adoOrgRepos(c.org)
	}
	var hits []snapshot
	for _, repo := range repos {
		all, err := s.store.list(repo)
		if err != nil {
			continue
		}
		for _, sn := range all {
			if !slices.ContainsFunc(q.conds, func(m func(snapshot, string) bool) bool { return !m(sn, project) }) {
				hits = append(hits, sn)
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if q.descending {
			return hits[i].number > hits[j].number
		}
		return hits[i].number < hits[j].number
	})
	if top, err := strconv.Atoi(r.URL.Query().Get("$top")); err == nil && top >= 0 && top < len(hits) {
		hits = hits[:top]
	}
	if len(hits) > adoWiqlMax {
		adoError(w, http.StatusBadRequest, "VssServiceException", fmt.Sprintf(
			"VS402337: The number of work items returned exceeds the size limit of %d. Change the query to return fewer work items.", adoWiqlMax))
		return
	}
	refs := make([]map[string]any, 0, len(hits))
	for _, sn := range hits {
		refs = append(refs, map[string]any{"id": sn.number, "url": adoWorkItemURL(c.base, sn.number)})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"queryType":       "flat",
		"queryResultType": "workItem",
		"asOf":            adoTime(s.clock()),
		"columns":         []map[string]string{{"referenceName": "System.Id", "name": "ID", "url": c.base + "/_apis/wit/fields/System.Id"}},
		"workItems":       refs,
	})
}
