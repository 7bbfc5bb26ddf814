package trackersim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The Jira dialect's JQL: the grammar of Jira's advanced search
// (https://support.atlassian.com/jira-software-cloud/docs/what-is-advanced-search-in-jira-cloud/)
// over the fields the sim's issues have:
//
//	clause   field (= | != | in | not in) value-or-list, or field is [not] EMPTY
//	fields   project, labels, component, statusCategory, issuekey (key)
//	joined   AND, OR, NOT and parentheses (AND binds tighter than OR)
//	order    ORDER BY key [ASC | DESC]
//
// which covers the daemon's queries (platforms/jira ListQuery, AcrossQuery,
// a configured jql scope with the lifecycle clauses ANDed on) and the scopes
// users write ("project in (A, B) AND component = Payments"). Anything
// else (another field, ~, functions) is refused with a 400 naming what the
// sim understands, so a query the sim cannot answer fails loudly in tests
// instead of silently matching nothing.
//
// Semantics follow the JQL reference
// (https://support.atlassian.com/jira-software-cloud/docs/jql-operators/):
// "!=" and "not in" do not match an issue whose field is empty ("the '!='
// operator will not match a field that has no value"); project keys,
// component names and issue keys compare case-insensitively; a project
// that does not exist is an error ("The value 'X' does not exist for the
// field 'project'."), not an empty match.

// jqlQuery is a parsed query.
type jqlQuery struct {
	where      jqlExpr // nil: every issue
	descending bool
}

// jqlSupported is the refusal's explanation.
const jqlSupported = `the trackersim supports the fields project, labels, component, statusCategory (Done) and issuekey with =, !=, in, not in and is [not] EMPTY, joined by AND, OR, NOT and parentheses, and ORDER BY key ASC|DESC`

// jqlExpr is a node of a parsed WHERE clause.
type jqlExpr interface {
	eval(sn snapshot) bool
}

type jqlAnd []jqlExpr
type jqlOr []jqlExpr
type jqlNot struct{ x jqlExpr }

func (a jqlAnd) eval(sn snapshot) bool {
	for _, x := range a {
		if !x.eval(sn) {
			return false
		}
	}
	return true
}

func (o jqlOr) eval(sn snapshot) bool {
	for _, x := range o {
		if x.eval(sn) {
			return true
		}
	}
	return false
}

func (n jqlNot) eval(sn snapshot) bool { return !n.x.eval(sn) }

// jqlClause is one "field operator value(s)" clause.
type jqlClause struct {
	field  string // canonical: project, labels, component, statusCategory, issuekey
	negate bool   // != or not in (or is not EMPTY)
	empty  bool   // is [not] EMPTY
	values []string
}

// jqlFieldValues are the values of field on sn.
func jqlFieldValues(field string, sn snapshot) []string {
	switch field {
	case "project":
		return []string{sn.repo}
	case "labels":
		return sn.labelNames()
	case "component":
		return sn.components
	case "statusCategory":
		if sn.open {
			return []string{"To Do"}
		}
		return []string{"Done"}
	case "issuekey":
		return []string{jiraKey(sn)}
	}
	return nil
}

func (c jqlClause) eval(sn snapshot) bool {
	have := jqlFieldValues(c.field, sn)
	if c.empty {
		return (len(have) == 0) != c.negate
	}
	if len(have) == 0 {
		// "=" and "in" need a value; "!=" and "not in" never match an
		// empty field.
		return false
	}
	fold := c.field != "labels" // labels compare exactly (the sim's choice; the daemon re-checks them)
	hit := false
	for _, want := range c.values {
		for _, h := range have {
			if h == want || (fold && strings.EqualFold(h, want)) {
				hit = true
			}
		}
	}
	return hit != c.negate
}

// jqlFields maps a field name as written (case-insensitive, aliases) to
// the canonical one.
var jqlFields = map[string]string{
	"project": "project", "labels": "labels", "label": "labels", "component": "component",
	"statuscategory": "statusCategory", "issuekey": "issuekey", "key": "issuekey", "issue": "issuekey",
}

type jqlToken struct {
	text   string
	quoted bool
}

// jqlTokens splits a query into words, operators, parentheses, commas and
// quoted strings ("…" or '…', with backslash escapes).
func jqlTokens(q string) ([]jqlToken, error) {
	var out []jqlToken
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(q) && q[j] != c; j++ {
				if q[j] == '\\' && j+1 < len(q) {
					j++
				}
				b.WriteByte(q[j])
			}
			if j >= len(q) {
				return nil, fmt.Errorf("unterminated string starting at character %d", i+1)
			}
			out = append(out, jqlToken{text: b.String(), quoted: true})
			i = j + 1
		case c == '=' || c == '(' || c == ')' || c == ',':
			out = append(out, jqlToken{text: string(c)})
			i++
		case c == '!' && i+1 < len(q) && q[i+1] == '=':
			out = append(out, jqlToken{text: "!="})
			i += 2
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\r\n=!\"'(),", rune(q[j])) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("unexpected %q at character %d", c, i+1)
			}
			out = append(out, jqlToken{text: q[i:j]})
			i = j
		}
	}
	return out, nil
}

// jqlMaxDepth bounds nesting, so a hostile query cannot exhaust the stack.
const jqlMaxDepth = 32

// jqlParser is a recursive-descent parser over tokens.
type jqlParser struct {
	toks  []jqlToken
	i     int
	depth int
}

func (p *jqlParser) word(w string) bool {
	return p.i < len(p.toks) && !p.toks[p.i].quoted && strings.EqualFold(p.toks[p.i].text, w)
}

func (p *jqlParser) punct(s string) bool {
	return p.i < len(p.toks) && !p.toks[p.i].quoted && p.toks[p.i].text == s
}

func (p *jqlParser) atOrderBy() bool {
	return p.word("ORDER") && p.i+1 < len(p.toks) && strings.EqualFold(p.toks[p.i+1].text, "BY")
}

// parseJQL parses q or explains why the sim cannot.
func parseJQL(q string) (jqlQuery, error) {
	var out jqlQuery
	toks, err := jqlTokens(q)
	if err != nil {
		return out, err
	}
	p := &jqlParser{toks: toks}
	if len(toks) > 0 && !p.atOrderBy() {
		if out.where, err = p.or(); err != nil {
			return out, err
		}
	}
	if p.i == len(toks) {
		return out, nil
	}
	if !p.atOrderBy() {
		return out, fmt.Errorf("unexpected %q (expected AND, OR or ORDER BY)", toks[p.i].text)
	}
	p.i += 2
	if !p.word("key") && !p.word("issuekey") {
		return out, fmt.Errorf("unsupported ORDER BY clause (only key)")
	}
	p.i++
	switch {
	case p.i == len(toks):
	case p.word("ASC") && p.i+1 == len(toks):
	case p.word("DESC") && p.i+1 == len(toks):
		out.descending = true
	default:
		return out, fmt.Errorf("unsupported ORDER BY clause")
	}
	return out, nil
}

func (p *jqlParser) or() (jqlExpr, error) {
	return p.joined("OR", p.and, func(xs []jqlExpr) jqlExpr { return jqlOr(xs) })
}

func (p *jqlParser) and() (jqlExpr, error) {
	return p.joined("AND", p.unary, func(xs []jqlExpr) jqlExpr { return jqlAnd(xs) })
}

// joined parses operands separated by the keyword op, made one node by
// wrap when there is more than one.
func (p *jqlParser) joined(op string, operand func() (jqlExpr, error), wrap func([]jqlExpr) jqlExpr) (jqlExpr, error) {
	x, err := operand()
	if err != nil {
		return nil, err
	}
	xs := []jqlExpr{x}
	for p.word(op) {
		p.i++
		y, err := operand()
		if err != nil {
			return nil, err
		}
		xs = append(xs, y)
	}
	if len(xs) == 1 {
		return x, nil
	}
	return wrap(xs), nil
}

func (p *jqlParser) unary() (jqlExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > jqlMaxDepth {
		return nil, fmt.Errorf("query nested deeper than %d", jqlMaxDepth)
	}
	switch {
	case p.word("NOT"):
		p.i++
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return jqlNot{x}, nil
	case p.punct("("):
		p.i++
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.punct(")") {
			return nil, fmt.Errorf("expected \")\"")
		}
		p.i++
		return x, nil
	}
	return p.clause()
}

func (p *jqlParser) clause() (jqlExpr, error) {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("expected a clause \"field operator value\" at the end of the query")
	}
	name := p.toks[p.i]
	field, ok := jqlFields[strings.ToLower(name.text)]
	if !ok || name.quoted {
		return nil, fmt.Errorf("unsupported field %q", name.text)
	}
	p.i++
	c := jqlClause{field: field}
	list := false
	switch {
	case p.punct("="):
	case p.punct("!="):
		c.negate = true
	case p.word("in"):
		list = true
	case p.word("not") && p.i+1 < len(p.toks) && strings.EqualFold(p.toks[p.i+1].text, "in"):
		p.i++
		list, c.negate = true, true
	case p.word("is"):
		p.i++
		if p.word("not") {
			p.i++
			c.negate = true
		}
		if !p.word("EMPTY") && !p.word("NULL") {
			return nil, fmt.Errorf("%s is: only EMPTY", name.text)
		}
		p.i++
		c.empty = true
		return c, nil
	default:
		op := "nothing"
		if p.i < len(p.toks) {
			op = strconv.Quote(p.toks[p.i].text)
		}
		return nil, fmt.Errorf("unsupported operator %s after %q", op, name.text)
	}
	p.i++
	if list {
		if !p.punct("(") {
			return nil, fmt.Errorf("%s in: expected a list such as (A, B)", name.text)
		}
		p.i++
		for {
			v, err := p.value(name.text)
			if err != nil {
				return nil, err
			}
			c.values = append(c.values, v)
			if p.punct(",") {
				p.i++
				continue
			}
			if p.punct(")") {
				p.i++
				break
			}
			return nil, fmt.Errorf("%s in: expected \",\" or \")\"", name.text)
		}
	} else {
		v, err := p.value(name.text)
		if err != nil {
			return nil, err
		}
		c.values = []string{v}
	}
	if field == "statusCategory" {
		for _, v := range c.values {
			if !strings.EqualFold(v, "Done") {
				return nil, fmt.Errorf("statusCategory %q: only Done", v)
			}
		}
	}
	return c, nil
}

func (p *jqlParser) value(field string) (string, error) {
	if p.i >= len(p.toks) {
		return "", fmt.Errorf("%s: expected a value", field)
	}
	t := p.toks[p.i]
	if !t.quoted && (t.text == "(" || t.text == ")" || t.text == "," || t.text == "=" || t.text == "!=") {
		return "", fmt.Errorf("%s: expected a value, not %q", field, t.text)
	}
	p.i++
	return t.text, nil
}

// matches reports whether an issue satisfies q.
func (q jqlQuery) matches(sn snapshot) bool { return q.where == nil || q.where.eval(sn) }

// projects are the project values q's clauses name, for the existence
// check Jira makes.
func (q jqlQuery) projects() []string {
	var out []string
	var walk func(x jqlExpr)
	walk = func(x jqlExpr) {
		switch x := x.(type) {
		case jqlAnd:
			for _, y := range x {
				walk(y)
			}
		case jqlOr:
			for _, y := range x {
				walk(y)
			}
		case jqlNot:
			walk(x.x)
		case jqlClause:
			if x.field == "project" && !x.empty {
				out = append(out, x.values...)
			}
		}
	}
	if q.where != nil {
		walk(q.where)
	}
	return out
}

// onlyProjects returns the projects every match must belong to, when the
// top-level conjunction pins them (project = X or project in (…), not
// negated), so a search reads only those projects' issues; ok is false when
// the query may match any project.
func (q jqlQuery) onlyProjects() (keys []string, ok bool) {
	terms := []jqlExpr{q.where}
	if and, isAnd := q.where.(jqlAnd); isAnd {
		terms = and
	}
	for _, x := range terms {
		if c, isClause := x.(jqlClause); isClause && c.field == "project" && !c.negate && !c.empty {
			return slices.Clone(c.values), true
		}
	}
	return nil, false
}
