package trackersim

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// A parser for the part of the GraphQL language the GitHub dialect's
// /graphql endpoint serves (https://spec.graphql.org/October2021/): one
// operation (query or mutation, optionally named, with variable
// definitions), fields with aliases, arguments and selection sets, and
// argument values that are variables, strings, numbers, booleans, null,
// enums, lists and input objects. Fragments and directives are refused
// with a parse error rather than misread.

// gqlOp is a parsed operation.
type gqlOp struct {
	kind string // "query" or "mutation"
	name string
	sel  []gqlField
}

// gqlField is one selected field.
type gqlField struct {
	alias, name string
	args        map[string]any // values: gqlVar, string, int64, float64, bool, nil, gqlEnum, []any, map[string]any
	sel         []gqlField
	line, col   int
	// on is an inline fragment's type condition ("... on Issue { … }"):
	// its sel applies where the object is of that type; name is "".
	on string
}

// key is the field's name in the answer: its alias, else its name.
func (f gqlField) key() string {
	if f.alias != "" {
		return f.alias
	}
	return f.name
}

type (
	gqlVar  string
	gqlEnum string
)

type gqlParser struct {
	src       string
	pos       int
	line, col int
}

// parseGraphQL parses a document holding one operation.
func parseGraphQL(src string) (op gqlOp, err error) {
	p := &gqlParser{src: src, line: 1, col: 1}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(gqlParseError)
			if !ok {
				panic(r)
			}
			err = pe
		}
	}()
	p.skip()
	op.kind = "query"
	if p.peek() != '{' {
		op.kind = p.name()
		if op.kind != "query" && op.kind != "mutation" {
			p.fail("unexpected %q", op.kind)
		}
		if isNameStart(p.peek()) {
			op.name = p.name()
		}
		if p.peek() == '(' {
			p.varDefs()
		}
	}
	op.sel = p.selectionSet()
	if p.pos < len(p.src) {
		p.fail("unexpected %q after the operation (one operation per document)", string(p.src[p.pos]))
	}
	return op, nil
}

// gqlParseError reads like GitHub's parse errors: "Parse error on \"x\"
// (IDENTIFIER) at [1, 2]".
type gqlParseError struct {
	msg       string
	line, col int
}

func (e gqlParseError) Error() string {
	return fmt.Sprintf("Parse error %s at [%d, %d]", e.msg, e.line, e.col)
}

func (p *gqlParser) fail(format string, a ...any) {
	panic(gqlParseError{msg: fmt.Sprintf(format, a...), line: p.line, col: p.col})
}

func (p *gqlParser) peek() byte {
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *gqlParser) advance() {
	if p.src[p.pos] == '\n' {
		p.line, p.col = p.line+1, 1
	} else {
		p.col++
	}
	p.pos++
}

// skip passes whitespace, commas (insignificant in GraphQL) and comments.
func (p *gqlParser) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.advance()
			}
		case c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0xEF || c == 0xBB || c == 0xBF:
			p.advance()
		default:
			return
		}
	}
}

func (p *gqlParser) expect(c byte) {
	if p.peek() != c {
		p.fail("on %q: expected %q", string(p.peek()), string(c))
	}
	p.advance()
	p.skip()
}

func isNameStart(c byte) bool { return c == '_' || unicode.IsLetter(rune(c)) && c < 0x80 }

func (p *gqlParser) name() string {
	if !isNameStart(p.peek()) {
		p.fail("on %q: expected a name", string(p.peek()))
	}
	start := p.pos
	for p.pos < len(p.src) && (isNameStart(p.src[p.pos]) || p.src[p.pos] >= '0' && p.src[p.pos] <= '9') {
		p.advance()
	}
	n := p.src[start:p.pos]
	p.skip()
	return n
}

// varDefs passes "($a: Type!, $b: [T!]! = default)": the sim takes
// variables' values from the request and checks no types.
func (p *gqlParser) varDefs() {
	p.expect('(')
	for p.peek() != ')' {
		p.expect('$')
		p.name()
		p.expect(':')
		p.typeRef()
		if p.peek() == '=' {
			p.expect('=')
			p.value()
		}
	}
	p.expect(')')
}

func (p *gqlParser) typeRef() {
	if p.peek() == '[' {
		p.expect('[')
		p.typeRef()
		p.expect(']')
	} else {
		p.name()
	}
	if p.peek() == '!' {
		p.expect('!')
	}
}

func (p *gqlParser) selectionSet() []gqlField {
	p.expect('{')
	var out []gqlField
	for p.peek() != '}' {
		if p.peek() == '.' {
			// An inline fragment, "... on Type { … }"
			// (https://spec.graphql.org/October2021/#sec-Inline-Fragments);
			// named fragments are not served.
			f := gqlField{line: p.line, col: p.col}
			p.expect('.')
			p.expect('.')
			p.expect('.')
			if p.name() != "on" {
				p.fail("on \"...\": only inline fragments with a type condition are served by the sim")
			}
			f.on = p.name()
			f.sel = p.selectionSet()
			out = append(out, f)
			continue
		}
		if p.peek() == '@' {
			p.fail("on %q: directives are not served by the sim", string(p.peek()))
		}
		f := gqlField{line: p.line, col: p.col}
		n := p.name()
		if p.peek() == ':' {
			p.expect(':')
			f.alias, n = n, p.name()
		}
		f.name = n
		if p.peek() == '(' {
			f.args = p.arguments()
		}
		if p.peek() == '{' {
			f.sel = p.selectionSet()
		}
		out = append(out, f)
	}
	p.expect('}')
	if len(out) == 0 {
		p.fail("on \"}\": empty selection set")
	}
	return out
}

func (p *gqlParser) arguments() map[string]any {
	p.expect('(')
	out := map[string]any{}
	for p.peek() != ')' {
		n := p.name()
		p.expect(':')
		out[n] = p.value()
	}
	p.expect(')')
	return out
}

func (p *gqlParser) value() any {
	switch c := p.peek(); {
	case c == '$':
		p.expect('$')
		return gqlVar(p.name())
	case c == '"':
		return p.stringValue()
	case c == '[':
		p.expect('[')
		out := []any{}
		for p.peek() != ']' {
			out = append(out, p.value())
		}
		p.expect(']')
		return out
	case c == '{':
		p.expect('{')
		out := map[string]any{}
		for p.peek() != '}' {
			n := p.name()
			p.expect(':')
			out[n] = p.value()
		}
		p.expect('}')
		return out
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte("-+.eE0123456789", p.src[p.pos]) >= 0 {
			p.advance()
		}
		lit := p.src[start:p.pos]
		p.skip()
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return n
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			p.fail("on %q: not a number", lit)
		}
		return f
	default:
		switch n := p.name(); n {
		case "true", "false":
			return n == "true"
		case "null":
			return nil
		default:
			return gqlEnum(n)
		}
	}
}

// stringValue reads a "…" string with JSON-style escapes (block strings
// are not served).
func (p *gqlParser) stringValue() string {
	start := p.pos
	p.advance()
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			p.fail("unterminated string")
		}
		c := p.src[p.pos]
		p.advance()
		if c == '\\' && p.pos < len(p.src) {
			p.advance()
			continue
		}
		if c == '"' {
			break
		}
	}
	s, err := strconv.Unquote(p.src[start:p.pos])
	if err != nil {
		p.fail("on %s: bad string", p.src[start:p.pos])
	}
	p.skip()
	return s
}
