package main

import (
	"bytes"
	"strings"
	"testing"
)

// The README's first command must keep working: the demo settles every
// ticket, shows a failure comment, and exits 0.
func TestDemoSettlesEveryTicket(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"demo", "-timeout", "60s"}, &out, &errOut); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{"in-progress  → done", "in-progress  → failed", "exit status 3", "every ticket settled", "tracker sandbox"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	// demo/webshop#1 is the issue without the trigger label.
	if strings.Contains(s, "demo/webshop#1 ") {
		t.Error("the untriggered issue was written to")
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"validate", "-c", "../../testdata/config/bad.yaml"}, &out, &errOut); code != 1 {
		t.Fatalf("validate bad.yaml exited %d, want 1", code)
	}
	for _, want := range []string{"projects[1].webhook.secret_env: GH_SECRET is not set", "projects[0].pipeline.command: required"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("validate output lacks %q:\n%s", want, errOut.String())
		}
	}
	out.Reset()
	errOut.Reset()
	t.Setenv("GITHUB_TOKEN", "x")
	t.Setenv("GH_WEBHOOK_SECRET", "y")
	if code := run([]string{"validate", "-c", "../../testdata/config/minimal.yaml"}, &out, &errOut); code != 0 {
		t.Errorf("validate minimal.yaml exited %d: %s", code, errOut.String())
	}
}
