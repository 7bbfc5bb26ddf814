package config

import "strings"

// FieldError is one problem with one field, named by its YAML path.
type FieldError struct {
	Field string // e.g. "projects[1].webhook.secret_env"; "" for the document
	Msg   string
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Errors is every problem Parse found, in document order where it can tell.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es *Errors) add(field, msg string) { *es = append(*es, FieldError{Field: field, Msg: msg}) }

// has reports whether field already has a problem, so one mistake is not
// reported twice (a pasted token is not also "required").
func (es Errors) has(field string) bool {
	for _, e := range es {
		if e.Field == field {
			return true
		}
	}
	return false
}
