package nodump_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/nodump"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
)

const secret = "ghp_daemon-secret-token-1234"

// TestMain lets the test binary play the daemon: re-executed with
// NODUMP_DAEMON set, it optionally calls Enable (as main does), then runs a
// pipeline through procrun, the daemon's path, which tries to read the
// daemon's environment and a config file, and prints what it got.
func TestMain(m *testing.M) {
	if mode := os.Getenv("NODUMP_DAEMON"); mode != "" {
		if mode == "enable" {
			if err := nodump.Enable(); err != nil {
				fmt.Println("enable:", err)
				os.Exit(3)
			}
		}
		res := procrun.Run(context.Background(), procrun.Spec{
			Argv:    []string{"sh", "-c", `cat /proc/$PPID/environ && echo ENVIRON-READ; cat "$CONFIG" && echo CONFIG-READ; exit 0`},
			Env:     []string{"PATH=" + os.Getenv("PATH"), "CONFIG=" + os.Getenv("NODUMP_CONFIG")},
			Timeout: 10 * time.Second,
		})
		os.Stdout.Write(res.Tail)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// daemon runs the test binary as the daemon. Under root (whose
// CAP_SYS_PTRACE reads any process's environ) it runs as nobody instead,
// from a copy of the binary nobody can execute: the attack is a same-uid
// one, not root's.
func daemon(t *testing.T, mode, config string) string {
	t.Helper()
	bin := os.Args[0]
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		dir := filepath.Dir(config)
		bin = filepath.Join(dir, "daemon.test")
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "NODUMP_DAEMON="+mode, "NODUMP_CONFIG="+config, "AGENTSMITH_TOKEN="+secret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("daemon (%s): %v\n%s", mode, err, out)
	}
	return string(out)
}

// A same-uid pipeline cannot read a non-dumpable daemon's environment. Its
// config file it can still read when file modes allow: docs/security.md
// says so and how to keep it out of reach (run_as, separate container).
func TestPipelineCannotReadTheDaemonsEnvironment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc and PR_SET_DUMPABLE are Linux")
	}
	dir, err := os.MkdirTemp("", "nodump")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // nobody runs the binary from here
		t.Fatal(err)
	}
	config := filepath.Join(dir, "agentsmithd.yaml")
	if err := os.WriteFile(config, []byte("token_env: AGENTSMITH_TOKEN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The attack, without the protection: the pipeline reads the token.
	if out := daemon(t, "off", config); !strings.Contains(out, secret) || !strings.Contains(out, "ENVIRON-READ") {
		t.Fatalf("control: a dumpable daemon's environ should be readable (the attack); got:\n%s", out)
	}
	out := daemon(t, "enable", config)
	if strings.Contains(out, secret) || strings.Contains(out, "ENVIRON-READ") {
		t.Errorf("the pipeline read the non-dumpable daemon's environment:\n%s", out)
	}
	if !strings.Contains(out, "CONFIG-READ") {
		t.Logf("config file not readable to the pipeline here:\n%s", out)
	}
}
