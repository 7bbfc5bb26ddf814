package sim

import (
	"fmt"
	"slices"
	"strings"
)

// The Jira dialect's JQL subset: exactly the queries the daemon's tracker
// sends (platforms/jira.ListQuery, and AcrossQuery without the project
// clause, which searches every project of the site),
//
//	project = "PROJ" AND labels = "x" AND statusCategory != Done ORDER BY key ASC
//
// with the clauses in any order, values quoted or bare, "=" or "!=" on
// statusCategory and the ORDER BY optional. Anything else is refused with a
// 400 naming what the sim understands, so a change to the tracker's query
// fails loudly in tests instead of silently matching nothing.

// jqlQuery is a parsed query.
type jqlQuery struct {
	project string
	labels  []string // every labels = clause must hold
	// doneCategory: nil = no statusCategory clause; else whether the query
	// wants the Done category (statusCategory = Done) or not (!=).
	doneCategory *bool
	descending   bool
}

// jqlSupported is the refusal's explanation.
const jqlSupported = `the trackersim supports only: [project = "KEY" AND] labels = "label" [AND statusCategory != Done] [ORDER BY key ASC|DESC]`

type jqlToken struct {
	text   string
	quoted bool
}

// jqlTokens splits a query into words, operators and quoted strings
// ("…" or '…', with backslash escapes).
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
		case c == '=':
			out = append(out, jqlToken{text: "="})
			i++
		case c == '!' && i+1 < len(q) && q[i+1] == '=':
			out = append(out, jqlToken{text: "!="})
			i += 2
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\r\n=!\"'", rune(q[j])) {
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

// parseJQL parses q or explains why the sim cannot.
func parseJQL(q string) (jqlQuery, error) {
	var out jqlQuery
	toks, err := jqlTokens(q)
	if err != nil {
		return out, err
	}
	word := func(i int, w string) bool {
		return i < len(toks) && !toks[i].quoted && strings.EqualFold(toks[i].text, w)
	}
	i := 0
	for {
		if i+2 >= len(toks) {
			return out, fmt.Errorf("expected a clause \"field operator value\" at the end of the query")
		}
		field, op, val := toks[i], toks[i+1].text, toks[i+2]
		switch {
		case word(i, "project") && op == "=":
			if out.project != "" {
				return out, fmt.Errorf("more than one project clause")
			}
			out.project = val.text
		case word(i, "labels") && op == "=":
			out.labels = append(out.labels, val.text)
		case word(i, "statusCategory") && (op == "=" || op == "!=") && strings.EqualFold(val.text, "Done"):
			done := op == "="
			out.doneCategory = &done
		default:
			return out, fmt.Errorf("unsupported clause %q %s %q", field.text, op, val.text)
		}
		i += 3
		if i == len(toks) {
			break
		}
		if word(i, "AND") {
			i++
			continue
		}
		if word(i, "ORDER") && word(i+1, "BY") && word(i+2, "key") {
			rest := toks[i+3:]
			switch {
			case len(rest) == 0 || (len(rest) == 1 && word(i+3, "ASC")):
			case len(rest) == 1 && word(i+3, "DESC"):
				out.descending = true
			default:
				return out, fmt.Errorf("unsupported ORDER BY clause")
			}
			break
		}
		return out, fmt.Errorf("unsupported operator or clause %q (only AND and ORDER BY key)", toks[i].text)
	}
	return out, nil
}

// matches reports whether an issue satisfies q's filters (the project is
// chosen by the caller).
func (q jqlQuery) matches(sn snapshot) bool {
	names := sn.labelNames()
	for _, l := range q.labels {
		if !slices.Contains(names, l) {
			return false
		}
	}
	if q.doneCategory != nil && *q.doneCategory == sn.open {
		return false
	}
	return true
}
