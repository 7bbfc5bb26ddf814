package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func TestNoArgumentsAndHelpListSubcommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, 2}, {[]string{"-h"}, 0}, {[]string{"--help"}, 0}, {[]string{"help"}, 0}} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.args, code, tc.code)
		}
		for _, sub := range []string{"serve", "validate", "print-config", "demo", "version"} {
			if !strings.Contains(out.String()+errOut.String(), "\n  "+sub+" ") {
				t.Errorf("%q does not list %s:\n%s%s", tc.args, sub, out.String(), errOut.String())
			}
		}
	}
}

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if s := out.String(); !strings.HasPrefix(s, "agentsmithd ") || !strings.Contains(s, runtime.Version()) || !strings.Contains(s, "commit ") {
		t.Errorf("version printed %q", s)
	}
}

// --listen and --instance-id win over the config (shown by serve
// --print-config, which prints what serve would run with).
func TestListenAndInstanceFlagsOverrideTheConfig(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "x")
	cfg := "../../testdata/config/minimal.yaml"
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--print-config", "-c", cfg, "--listen", "127.0.0.1:9191", "--instance-id", "replica-z"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if s := out.String(); !strings.Contains(s, "listen: 127.0.0.1:9191") || !strings.Contains(s, "instance_id: replica-z") {
		t.Errorf("flags not applied:\n%s", s)
	}
	for _, bad := range [][]string{{"--listen", "nope"}, {"--instance-id", "a b"}} {
		out.Reset()
		errOut.Reset()
		if code := run(append([]string{"serve", "-c", cfg}, bad...), &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", bad, code, errOut.String())
		}
	}
}
