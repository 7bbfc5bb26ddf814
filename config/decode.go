package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The decoder walks the YAML node tree alongside the Go types instead of
// calling yaml.Unmarshal, for three reasons: every problem is reported with
// its full path rather than the first one only; messages are our own, so a
// secret pasted where a {env: NAME} mapping belongs is never echoed back;
// and shorthand keys (token_env) can fold into Secret fields.

// Bounds on the work spent on a document, so alias bombs and
// self-referencing merges fail fast instead of spinning.
const (
	maxNodes      = 50_000
	maxMergeDepth = 16
	maxDecodeErrs = 100
)

// shorthands is implemented by structs that accept <name>_env / <name>_file
// keys for a Secret field.
type shorthands interface {
	shorthand(key string) *Secret
}

// scalarForm is a mapping that may also be written as a scalar, its short
// form (`gate: approval`); fromScalar returns the complaint, or "".
type scalarForm interface {
	fromScalar(s string) string
}

func (p *Project) shorthand(key string) *Secret {
	switch key {
	case "token_env":
		return &p.tokenEnv
	case "token_file":
		return &p.tokenFile
	}
	return nil
}

func (w *ProjectWebhook) shorthand(key string) *Secret {
	switch key {
	case "secret_env":
		return &w.secretEnv
	case "secret_file":
		return &w.secretFile
	}
	return nil
}

func (s *Status) shorthand(key string) *Secret {
	switch key {
	case "token_env":
		return &s.tokenEnv
	case "token_file":
		return &s.tokenFile
	}
	return nil
}

func (a *GitHubApp) shorthand(key string) *Secret {
	switch key {
	case "private_key_env":
		return &a.privateKeyEnv
	case "private_key_file":
		return &a.privateKeyFile
	}
	return nil
}

func (r *Redis) shorthand(key string) *Secret {
	switch key {
	case "password_env":
		return &r.passwordEnv
	case "password_file":
		return &r.passwordFile
	case "sentinel_password_env":
		return &r.sentinelPasswordEnv
	case "sentinel_password_file":
		return &r.sentinelPasswordFile
	}
	return nil
}

type decoder struct {
	errs       *Errors
	budget     int
	mergeDepth int
	failures   int
}

// decode fills c from data, read from file ("" when not from a file),
// adding every problem to errs. It returns false when data is not YAML at
// all, so validation would only add noise.
func decode(data []byte, c *Config, errs *Errors, file string) bool {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		errs.add("", yamlProblem(data, err, file))
		return false
	}
	if doc.Kind == 0 { // empty document
		return true
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	d := &decoder{errs: errs, budget: maxNodes}
	d.value(root, reflect.ValueOf(c).Elem(), "")
	return true
}

func (d *decoder) fail(path string, n *yaml.Node, msg string) {
	d.failures++
	switch {
	case d.failures < maxDecodeErrs:
		d.errs.add(path, fmt.Sprintf("%s (line %d)", msg, n.Line))
	case d.failures == maxDecodeErrs:
		d.errs.add("", "too many errors; fix the ones above first")
	}
}

// spend counts a visited node; false once the document is too large.
func (d *decoder) spend(n *yaml.Node) bool {
	d.budget--
	if d.budget == 0 {
		d.fail("", n, "document too large or too many alias expansions")
	}
	return d.budget > 0
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
)

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	if n == nil || n.Kind == yaml.AliasNode || !d.spend(n) || isNull(n) {
		return
	}
	switch {
	case v.Kind() == reflect.Pointer:
		// Optional scalars (*bool): present in the YAML means set.
		p := reflect.New(v.Type().Elem())
		d.value(n, p.Elem(), path)
		v.Set(p)
	case v.Kind() == reflect.Struct:
		if sf, ok := v.Addr().Interface().(scalarForm); ok && n.Kind == yaml.ScalarNode {
			if msg := sf.fromScalar(n.Value); msg != "" {
				d.fail(path, n, msg)
			}
			return
		}
		if n.Kind != yaml.MappingNode {
			msg := "expected a mapping"
			if v.Type() == secretType {
				// Never echo the scalar: it is probably the secret itself.
				msg = "expected {env: NAME} or {file: PATH}; the secret itself does not belong in the config"
			}
			d.fail(path, n, msg)
			return
		}
		d.structure(n, v, path)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, n, "expected a list")
			return
		}
		items := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(item, items.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(items)
	default:
		d.leaf(n, v, path)
	}
}

type pair struct{ key, val *yaml.Node }

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	fields := yamlFields(v.Type())
	sh, _ := v.Addr().Interface().(shorthands)
	for _, p := range d.pairs(n, path) {
		key := p.key.Value
		fp := join(path, key)
		if i, ok := fields[key]; ok {
			d.value(p.val, v.Field(i), fp)
			continue
		}
		if sh != nil {
			if s := sh.shorthand(key); s != nil {
				d.shorthand(p.val, s, key, fp)
				continue
			}
		}
		msg := "unknown field"
		if near := nearest(key, knownKeys(fields, sh)); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		d.fail(fp, p.key, msg)
	}
	if s, ok := v.Addr().Interface().(*Secret); ok {
		s.at(join(path, "env"), join(path, "file"))
	}
}

func (d *decoder) shorthand(n *yaml.Node, s *Secret, key, path string) {
	var name string
	d.leaf(n, reflect.ValueOf(&name).Elem(), path)
	if strings.HasSuffix(key, "_env") {
		s.Env = name
	} else {
		s.File = name
	}
	s.at(path, path)
}

// pairs lists a mapping's entries with YAML merge keys ("<<: *base")
// expanded; explicit keys override merged ones. Duplicate keys are errors
// rather than the silent last-one-wins of yaml.Unmarshal.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	var merged, own []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if !d.spend(k) {
			return nil
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(path, k, "expected a plain key")
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeSource(val, path)...)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.fail(join(path, k.Value), k, fmt.Sprintf("duplicate field (first at line %d)", line))
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, pair{k, val})
	}
	var out []pair
	for _, p := range merged {
		if _, ok := seen[p.key.Value]; !ok {
			seen[p.key.Value] = p.key.Line // earlier merge sources win
			out = append(out, p)
		}
	}
	return append(out, own...)
}

func (d *decoder) mergeSource(n *yaml.Node, path string) []pair {
	n = resolveAlias(n)
	if n == nil || !d.spend(n) {
		return nil
	}
	if d.mergeDepth >= maxMergeDepth {
		d.fail(path, n, "merges (<<) nested too deeply")
		return nil
	}
	d.mergeDepth++
	defer func() { d.mergeDepth-- }()
	switch n.Kind {
	case yaml.MappingNode:
		return d.pairs(n, path)
	case yaml.SequenceNode:
		var out []pair
		for _, item := range n.Content {
			if item = resolveAlias(item); item != nil && item.Kind == yaml.MappingNode {
				out = append(out, d.pairs(item, path)...)
			} else if item != nil {
				d.fail(path, item, "merge (<<) takes mappings only")
			}
		}
		return out
	}
	d.fail(path, n, "merge (<<) takes a mapping or a list of mappings")
	return nil
}

// leaf decodes a scalar, a list of strings or a string map with yaml's own
// conversions, replacing its messages by ones that never quote the value.
func (d *decoder) leaf(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	var want string
	var kind yaml.Kind
	switch {
	case t == durationType:
		want, kind = `expected a duration such as "30s"`, yaml.ScalarNode
	case t.Kind() == reflect.String:
		want, kind = "expected a string", yaml.ScalarNode
	case t.Kind() == reflect.Bool:
		want, kind = "expected true or false", yaml.ScalarNode
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		want, kind = "expected an integer", yaml.ScalarNode
	case t.Kind() == reflect.Float64:
		want, kind = "expected a number", yaml.ScalarNode
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		want, kind = "expected a list of strings", yaml.SequenceNode
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Int:
		want, kind = "expected a list of integers", yaml.SequenceNode
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.String:
		want, kind = "expected a mapping of strings", yaml.MappingNode
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Int:
		want, kind = "expected a mapping of integers", yaml.MappingNode
	default:
		panic(fmt.Sprintf("config: no decoder for %s at %s", t, path))
	}
	if n.Kind != kind {
		d.fail(path, n, want)
		return
	}
	switch kind {
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if item = resolveAlias(item); item == nil || item.Kind != yaml.ScalarNode || isNull(item) {
				d.fail(fmt.Sprintf("%s[%d]", path, i), n.Content[i], "expected a "+elemName(t))
				return
			}
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], resolveAlias(n.Content[i+1])
			if k.Kind != yaml.ScalarNode || k.Value == "<<" {
				d.fail(path, k, "expected plain keys")
				return
			}
			if line, dup := seen[k.Value]; dup {
				d.fail(join(path, k.Value), k, fmt.Sprintf("duplicate key (first at line %d)", line))
				return
			}
			seen[k.Value] = k.Line
			if val == nil || val.Kind != yaml.ScalarNode {
				d.fail(join(path, k.Value), n.Content[i+1], "expected a "+elemName(t))
				return
			}
		}
	}
	tmp := reflect.New(t)
	if err := n.Decode(tmp.Interface()); err != nil {
		d.fail(path, n, want)
		return
	}
	v.Set(tmp.Elem())
}

// elemName names the element type of a list or mapping leaf.
func elemName(t reflect.Type) string {
	if t.Elem().Kind() == reflect.Int {
		return "integer"
	}
	return "string"
}

// yamlFields maps yaml keys to exported field indexes.
func yamlFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// knownKeys are the keys a mapping accepts: its fields and the shorthand
// secret keys (token_env, secret_file, ...) its type takes.
func knownKeys(fields map[string]int, sh shorthands) []string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
		if sh == nil {
			continue
		}
		for _, base := range []string{k, strings.TrimSuffix(k, "s")} {
			for _, form := range []string{base + "_env", base + "_file"} {
				if sh.shorthand(form) != nil && !slices.Contains(keys, form) {
					keys = append(keys, form)
				}
			}
		}
	}
	return keys
}

// maxSuggestDistance bounds how far a misspelt key may be from the key it
// is suggested as: two edits catch a dropped, doubled or swapped letter
// without proposing unrelated keys.
const maxSuggestDistance = 2

// nearest is the known key closest to key by edit distance, at most
// maxSuggestDistance away; ties go to the alphabetically first; "" when
// none is that close.
func nearest(key string, known []string) string {
	slices.Sort(known)
	best, bestD := "", maxSuggestDistance+1
	for _, k := range known {
		if d := levenshtein(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// levenshtein is the edit distance (insertions, deletions, substitutions)
// between a and b, by bytes: config keys are ASCII.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// yamlLine matches the line yaml.v3 puts in front of a syntax error.
var yamlLine = regexp.MustCompile(`^line (\d+): `)

// maxLineScan bounds how many lines past the reported one yamlProblem
// looks for the line at fault.
const maxLineScan = 200

// yamlProblem says what is wrong with a document yaml.v3 cannot parse, with
// the file and the line at fault. yaml.v3 reports the line where the
// enclosing block starts, not the line that breaks it ("line 2: did not
// find expected '-' indicator" for a list item indented one space short on
// line 4): the line at fault is the first whose addition makes the
// document fail with the same problem, which is found by parsing the
// document cut after each line from the reported one on.
func yamlProblem(data []byte, err error, file string) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		if file != "" {
			return "invalid YAML in " + file + ": " + msg
		}
		return "invalid YAML: " + msg
	}
	problem := msg[len(m[0]):]
	line, _ := strconv.Atoi(m[1])
	lines := strings.SplitAfter(string(data), "\n")
	for k := max(line, 1); k <= len(lines) && k < line+maxLineScan; k++ {
		var n yaml.Node
		perr := yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &n)
		if perr != nil && strings.HasSuffix(perr.Error(), ": "+problem) {
			line = k
			break
		}
	}
	switch {
	case strings.HasPrefix(problem, "did not find expected key"), strings.HasPrefix(problem, "did not find expected '-' indicator"),
		strings.HasPrefix(problem, "mapping values are not allowed"), strings.HasPrefix(problem, "block sequence entries are not allowed"):
		problem += " (check this line's indentation against the lines above it)"
	}
	if file != "" {
		return fmt.Sprintf("invalid YAML in %s, line %d: %s", file, line, problem)
	}
	return fmt.Sprintf("invalid YAML: line %d: %s", line, problem)
}
