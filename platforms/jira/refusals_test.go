package jira

import (
	"errors"
	"testing"

	jirasdk "github.com/andygrunwald/go-jira"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Only Jira's 400 whose labels error says "not on the appropriate screen"
// is the screen refusal: another field's, another status's, or another
// labels message is not.
func TestLabelsNotOnScreen(t *testing.T) {
	jerr := func(field, msg string) *jirasdk.Error {
		return &jirasdk.Error{HTTPError: errors.New("status 400"), Errors: map[string]string{field: msg}}
	}
	const screen = "Field 'labels' cannot be set. It is not on the appropriate screen, or unknown."
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"screen", platforms.Rejected(400, jerr("labels", screen)), true},
		{"wrapped", errors.Join(errors.New("jira: relabel PROJ-1"), platforms.Rejected(400, jerr("labels", screen))), true},
		{"403", platforms.Rejected(403, jerr("labels", screen)), false},
		{"other field", platforms.Rejected(400, jerr("summary", "Field 'summary' cannot be set. It is not on the appropriate screen, or unknown.")), false},
		{"other labels error", platforms.Rejected(400, jerr("labels", "The label 'a b' contains spaces which is invalid.")), false},
		{"not jira", platforms.Rejected(400, errors.New(screen)), false},
	} {
		if got := labelsNotOnScreen(c.err); got != c.want {
			t.Errorf("%s: %t, want %t", c.name, got, c.want)
		}
	}
}
