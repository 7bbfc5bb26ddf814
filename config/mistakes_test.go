package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes yml as agentsmithd.yaml in a fresh directory, with an
// executable implement.sh beside it, and returns the config's path.
func writeConfig(t *testing.T, yml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "implement.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agentsmithd.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fieldErrors loads path and returns its errors, one per line.
func fieldErrors(t *testing.T, path string) []string {
	t.Helper()
	t.Setenv("MISTAKES_TOKEN", "token")
	_, err := Load(path)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load(%s) = %v, want field errors", path, err)
	}
	return strings.Split(errs.Error(), "\n")
}

const mistakesHead = `redis: {addr: "127.0.0.1:6379"}
projects:
  - name: app
    platform: github
    repo: acme/app
    token_env: MISTAKES_TOKEN
    polling: {enabled: true}
`

// A misspelt key is suggested the known key it is at most two edits from,
// shorthand secret keys included; a key far from every known one gets no
// suggestion.
func TestUnknownFieldSuggestsTheNearestKey(t *testing.T) {
	for _, tc := range []struct{ yml, want string }{
		{mistakesHead + "    pipline: {command: [./implement.sh]}\n",
			`projects[0].pipline: unknown field; did you mean "pipeline"? (line 8)`},
		{strings.Replace(mistakesHead, "token_env", "tokn_env", 1) + "    pipeline: {command: [./implement.sh]}\n",
			`projects[0].tokn_env: unknown field; did you mean "token_env"? (line 6)`},
		{mistakesHead + "    pipeline: {command: [./implement.sh]}\nconsumr: {concurrency: 2}\n",
			`consumr: unknown field; did you mean "consumer"? (line 9)`},
		{mistakesHead + "    pipeline: {command: [./implement.sh]}\nflavour: mild\n",
			`flavour: unknown field (line 9)`},
	} {
		got := fieldErrors(t, writeConfig(t, tc.yml))
		if got[0] != tc.want {
			t.Errorf("got %q, want first %q", got, tc.want)
		}
	}
}

// A line indented wrongly is reported at its own line (yaml.v3 names the
// line its block starts on) and with the file's name.
func TestBadIndentationNamesTheFileAndTheLine(t *testing.T) {
	for _, tc := range []struct {
		yml  string
		line string
	}{
		// an item's key one space short of its siblings
		{"redis: {addr: \"127.0.0.1:6379\"}\nprojects:\n  - name: app\n   platform: github\n    repo: acme/app\n", "line 4"},
		// a key dedented out of its list item
		{"redis: {addr: \"127.0.0.1:6379\"}\nprojects:\n  - name: app\n    platform: github\n  token_env: X\n    repo: acme/app\n", "line 5"},
		// a key indented under a scalar
		{mistakesHead + "      pipeline: {command: [./implement.sh]}\n", "line 8"},
	} {
		path := writeConfig(t, tc.yml)
		got := fieldErrors(t, path)
		want := "invalid YAML in " + path + ", " + tc.line + ": "
		if len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], "indentation") {
			t.Errorf("%q:\n got %q\nwant one error starting %q about indentation", tc.yml, got, want)
		}
	}
}

// A command written as one list item with its flags says that arguments
// are separate list items.
func TestCommandWithItsArgumentsInOneItem(t *testing.T) {
	for _, cmd := range []string{`["./implement.sh --fast"]`, `["implement --fast", "x"]`} {
		t.Setenv("MISTAKES_TOKEN", "token")
		c, err := Load(writeConfig(t, mistakesHead+"    pipeline: {command: "+cmd+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.CheckCommands()
		if err == nil || !strings.Contains(err.Error(), "arguments are separate list items") {
			t.Errorf("command %s: %v, want it to say arguments are separate list items", cmd, err)
		}
	}
	c, err := Load(writeConfig(t, mistakesHead+`    pipeline: {command: ["./implement.sh --fast"]}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `projects[0].pipeline.command[0]: "./implement.sh --fast" is one list item, and no shell splits it: arguments are separate list items, as in [./implement.sh, --fast]`
	if err := c.CheckCommands(); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
