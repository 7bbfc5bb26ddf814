package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MarshalYAML names the secret's source and nothing else, so no encoding of
// a config — print-config, a debug dump — can carry the value.
func (s Secret) MarshalYAML() (any, error) {
	out := map[string]string{}
	if s.Env != "" {
		out["env"] = s.Env
	}
	if s.File != "" {
		out["file"] = s.File
	}
	return out, nil
}

// Marshal renders the effective config (defaults applied) as YAML that Parse
// accepts again: every field, zero values and booleans that are on by
// default included, so an operator sees each setting the daemon runs with;
// durations as "30s", floats as plain numbers, secrets as the env var or
// file they come from (an unset secret is left out), never their values.
func Marshal(c *Config) ([]byte, error) {
	cc := *c
	if len(cc.Redis.Addrs) > 0 {
		// Defaults copy addr into addrs; print the effective list only, so
		// the output parses back.
		cc.Redis.Addr = ""
	}
	n, err := encodeNode(reflect.ValueOf(cc), "")
	if err != nil {
		return nil, err
	}
	if n == nil {
		n = &yaml.Node{Kind: yaml.MappingNode}
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("print config: %w", err)
	}
	return out, nil
}

// encodeNode builds the node for v, or nil for an unset secret (left
// out). It walks the same exported, yaml-tagged fields the decoder reads.
func encodeNode(v reflect.Value, path string) (*yaml.Node, error) {
	t := v.Type()
	scalar := func(tag, s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s} }
	switch {
	case t == secretType:
		s := v.Interface().(Secret)
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		if s.Env != "" {
			m.Content = append(m.Content, scalar("!!str", "env"), scalar("!!str", s.Env))
		}
		if s.File != "" {
			m.Content = append(m.Content, scalar("!!str", "file"), scalar("!!str", s.File))
		}
		if len(m.Content) == 0 {
			return nil, nil
		}
		return m, nil
	case t == durationType:
		if v.Int() == 0 {
			return scalar("!!str", "0s"), nil
		}
		return scalar("!!str", time.Duration(v.Int()).String()), nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for i := range t.NumField() {
			f := t.Field(i)
			name := yamlName(f)
			if name == "" {
				continue
			}
			child, err := encodeNode(v.Field(i), join(path, name))
			if err != nil {
				return nil, err
			}
			if child != nil {
				m.Content = append(m.Content, scalar("!!str", name), child)
			}
		}
		if len(m.Content) == 0 {
			m.Style = yaml.FlowStyle
		}
		return m, nil
	case reflect.Slice:
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		if t.Elem().Kind() == reflect.String {
			seq.Style = yaml.FlowStyle
		}
		for i := range v.Len() {
			child, err := encodeNode(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if child == nil {
				child = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
				if t.Elem().Kind() == reflect.String {
					child = scalar("!!str", "")
				}
			}
			seq.Content = append(seq.Content, child)
		}
		return seq, nil
	case reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode}
		ks := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			ks = append(ks, k.String())
		}
		sort.Strings(ks)
		for _, k := range ks {
			val := v.MapIndex(reflect.ValueOf(k).Convert(t.Key()))
			child, err := encodeNode(val, join(path, k))
			if err != nil {
				return nil, err
			}
			if child == nil { // a zero value is still a value in a map
				child = scalar("!!str", "")
				if val.Kind() != reflect.String {
					child = scalar("", fmt.Sprint(val.Interface()))
				}
			}
			m.Content = append(m.Content, scalar("!!str", k), child)
		}
		return m, nil
	case reflect.String:
		return scalar("!!str", v.String()), nil
	case reflect.Bool:
		return scalar("!!bool", strconv.FormatBool(v.Bool())), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return scalar("!!int", strconv.FormatInt(v.Int(), 10)), nil
	case reflect.Float32, reflect.Float64:
		// No tag: a float tag on "2" would print as "!!float 2".
		return scalar("", strconv.FormatFloat(v.Float(), 'f', -1, 64)), nil
	case reflect.Pointer:
		// An optional bool (audit.enabled) left unset is on: print what
		// the daemon runs with.
		if v.IsNil() {
			if t.Elem().Kind() == reflect.Bool {
				return scalar("!!bool", "true"), nil
			}
			return nil, nil
		}
		return encodeNode(v.Elem(), path)
	}
	return nil, fmt.Errorf("print config: no encoding for %s at %s", t, path)
}

// yamlName is the key a field is written under; "" for fields the config
// file cannot set.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}
