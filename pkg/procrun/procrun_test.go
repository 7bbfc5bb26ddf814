package procrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

const sh = "/bin/sh"

// signalWriter records output and closes ready the first time marker appears,
// so tests act on the command's own report instead of sleeping.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	ready  chan struct{}
	once   sync.Once
}

func newSignalWriter(marker string) *signalWriter {
	return &signalWriter{marker: marker, ready: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *signalWriter) await(t *testing.T) {
	t.Helper()
	select {
	case <-w.ready:
	case <-time.After(10 * time.Second):
		t.Fatalf("command never printed %q", w.marker)
	}
}

func run(t *testing.T, spec Spec) Result {
	t.Helper()
	return runCtx(t, context.Background(), spec)
}

func runCtx(t *testing.T, ctx context.Context, spec Spec) Result {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, spec) }()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
		return Result{}
	}
}

// pidGone reports whether pid no longer runs (absent or a zombie waiting for
// a reaper that may not exist in a container).
func pidGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// Field 3, after "pid (comm)".
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

func awaitGone(t *testing.T, pid int) {
	t.Helper()
	eventually.Wait(t, 5*time.Second, fmt.Sprintf("process %d to be gone", pid), func() bool { return pidGone(pid) })
}

// pidFromOutput reads the first line of the form "pid N".
func pidFromOutput(t *testing.T, out []byte) int {
	t.Helper()
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "pid "); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				t.Fatalf("bad pid line %q", line)
			}
			return pid
		}
	}
	t.Fatalf("no pid in output %q", out)
	return 0
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 3, 255} {
		r := run(t, Spec{Argv: []string{sh, "-c", "exit " + strconv.Itoa(code)}})
		if r.Err != nil || r.ExitCode != code || r.Signal != "" {
			t.Fatalf("exit %d: got %+v", code, r)
		}
		if r.OK() != (code == 0) {
			t.Errorf("exit %d: OK() = %v", code, r.OK())
		}
		if want := "exit status " + strconv.Itoa(code); r.Describe() != want {
			t.Errorf("Describe() = %q, want %q", r.Describe(), want)
		}
	}
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	for name, spec := range map[string]Spec{
		"missing binary": {Argv: []string{"/nonexistent/binary"}},
		"not in PATH":    {Argv: []string{"no-such-command-xyz"}, Env: []string{"PATH=/usr/bin:/bin"}},
		"missing dir":    {Argv: []string{sh, "-c", "true"}, Dir: "/nonexistent/dir"},
		"empty argv":     {},
	} {
		r := run(t, spec)
		if r.Err == nil || r.ExitCode != -1 || r.OK() {
			t.Errorf("%s: got %+v", name, r)
		}
		if !strings.HasPrefix(r.Describe(), "failed to start: ") {
			t.Errorf("%s: Describe() = %q", name, r.Describe())
		}
	}
}

func TestStdinDelivered(t *testing.T) {
	t.Parallel()
	in := []byte(`{"ticket":"github:o/r#1"}` + "\n")
	r := run(t, Spec{Argv: []string{"/bin/cat"}, Stdin: in})
	if !r.OK() || !bytes.Equal(r.Tail, in) {
		t.Fatalf("got %+v tail %q", r, r.Tail)
	}

	// A command that ignores a large stdin must not make Run hang.
	big := bytes.Repeat([]byte("x"), 1<<20)
	r = run(t, Spec{Argv: []string{sh, "-c", "exit 0"}, Stdin: big})
	if !r.OK() {
		t.Fatalf("ignored stdin: %+v", r)
	}

	// No Stdin: the command reads EOF at once.
	r = run(t, Spec{Argv: []string{"/bin/cat"}})
	if !r.OK() || len(r.Tail) != 0 {
		t.Fatalf("empty stdin: %+v", r)
	}
}

func TestEnvExact(t *testing.T) {
	t.Setenv("PROCRUN_LEAK", "must-not-appear")
	r := run(t, Spec{Argv: []string{"/usr/bin/env"}, Env: []string{"A=1", "TICKET=github:o/r#7"}, Dir: t.TempDir()})
	if !r.OK() {
		t.Fatalf("%+v", r)
	}
	if got, want := string(r.Tail), "A=1\nTICKET=github:o/r#7\n"; got != want {
		t.Fatalf("env = %q, want %q", got, want)
	}

	// nil Env is empty, not inherited.
	r = run(t, Spec{Argv: []string{"/usr/bin/env"}})
	if !r.OK() || len(r.Tail) != 0 {
		t.Fatalf("nil env: %+v tail %q", r, r.Tail)
	}
}

func TestDirAndPathLookup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, Spec{Argv: []string{"pwd"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: dir})
	if !r.OK() || strings.TrimSpace(string(r.Tail)) != dir {
		t.Fatalf("got %+v tail %q, want %q", r, r.Tail, dir)
	}
}

func TestStdoutAndStderrCombined(t *testing.T) {
	t.Parallel()
	out := newSignalWriter("never")
	r := run(t, Spec{Argv: []string{sh, "-c", "echo out; echo err >&2; echo out2"}, Output: out})
	if !r.OK() || string(r.Tail) != "out\nerr\nout2\n" {
		t.Fatalf("got %+v tail %q", r, r.Tail)
	}
	if out.buf.String() != "out\nerr\nout2\n" {
		t.Fatalf("Output got %q", out.buf.String())
	}
}

func TestTimeoutTerminates(t *testing.T) {
	t.Parallel()
	// sleep dies of SIGTERM; no need for the grace period.
	r := run(t, Spec{Argv: []string{sh, "-c", "exec sleep 30"}, Timeout: 50 * time.Millisecond, Grace: 20 * time.Second})
	if !r.TimedOut || r.Signal != "terminated" || r.ExitCode != -1 || r.OK() {
		t.Fatalf("got %+v", r)
	}
	if r.Duration > 15*time.Second {
		t.Fatalf("waited for the grace period: %v", r.Duration)
	}
	if want := "killed by signal terminated after timeout 50ms"; r.Describe() != want {
		t.Errorf("Describe() = %q, want %q", r.Describe(), want)
	}
}

func TestTimeoutTermIsCatchable(t *testing.T) {
	t.Parallel()
	// A command that handles SIGTERM gets to clean up and report. The
	// timeout leaves a loaded machine's shell time to set its trap first.
	script := `trap 'echo got-term; exit 3' TERM; echo ready; sleep 30 & wait`
	r := run(t, Spec{Argv: []string{sh, "-c", script}, Timeout: 3 * time.Second, Grace: 20 * time.Second})
	if !r.TimedOut || r.ExitCode != 3 || r.Signal != "" {
		t.Fatalf("got %+v", r)
	}
	if !strings.Contains(string(r.Tail), "got-term") {
		t.Fatalf("tail %q", r.Tail)
	}
	if want := "exit status 3 after timeout 3s"; r.Describe() != want {
		t.Errorf("Describe() = %q, want %q", r.Describe(), want)
	}
}

func TestTimeoutKillsAfterGrace(t *testing.T) {
	t.Parallel()
	// The shell and its child both ignore SIGTERM (ignored dispositions are
	// inherited across exec), so only the SIGKILL after Grace ends them.
	// The timeout leaves a loaded machine's shell time to set its trap.
	script := `trap "" TERM; sleep 30 & echo "pid $!"; wait`
	start := time.Now()
	r := run(t, Spec{Argv: []string{sh, "-c", script}, Timeout: 2 * time.Second, Grace: 200 * time.Millisecond})
	if !r.TimedOut || r.Signal != "killed" || r.OK() {
		t.Fatalf("got %+v", r)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	awaitGone(t, pidFromOutput(t, r.Tail))
}

func TestGrandchildHoldingStdoutDoesNotBlock(t *testing.T) {
	t.Parallel()
	// The leader exits at once; a background child keeps stdout open.
	r := run(t, Spec{Argv: []string{sh, "-c", `sleep 30 & echo "pid $!"; exit 0`}})
	if !r.OK() {
		t.Fatalf("got %+v", r)
	}
	if r.Duration > 10*time.Second {
		t.Fatalf("Run waited for the grandchild: %v", r.Duration)
	}
	awaitGone(t, pidFromOutput(t, r.Tail))
}

func TestEscapedProcessDoesNotBlock(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	// setsid leaves the group, so the group kill cannot reach it; Run must
	// still return after the drain timeout.
	r := run(t, Spec{Argv: []string{sh, "-c", `setsid sleep 3 & exit 0`}, Env: []string{"PATH=/usr/bin:/bin"}})
	if !r.OK() {
		t.Fatalf("got %+v", r)
	}
}

func TestKillChannel(t *testing.T) {
	t.Parallel()
	out := newSignalWriter("ready")
	kill := make(chan struct{})
	done := make(chan Result, 1)
	script := `trap "" TERM; sleep 30 & echo "pid $!"; echo ready; wait`
	go func() {
		done <- Run(context.Background(), Spec{Argv: []string{sh, "-c", script}, Kill: kill, Grace: time.Hour, Output: out})
	}()
	out.await(t)
	close(kill)
	var r Result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Kill did not end the run")
	}
	if !r.Killed || r.Signal != "killed" || r.TimedOut || r.Canceled || r.OK() {
		t.Fatalf("got %+v", r)
	}
	if want := "killed by signal killed on kill request"; r.Describe() != want {
		t.Errorf("Describe() = %q, want %q", r.Describe(), want)
	}
	awaitGone(t, pidFromOutput(t, r.Tail))
}

func TestKillBeforeStart(t *testing.T) {
	t.Parallel()
	kill := make(chan struct{})
	close(kill)
	r := run(t, Spec{Argv: []string{sh, "-c", "echo started"}, Kill: kill})
	if !r.Killed || r.Err == nil || len(r.Tail) != 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	out := newSignalWriter("ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	script := `trap "" TERM; sleep 30 & echo "pid $!"; echo ready; wait`
	go func() {
		done <- Run(ctx, Spec{Argv: []string{sh, "-c", script}, Grace: 100 * time.Millisecond, Output: out})
	}()
	out.await(t)
	cancel()
	var r Result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end the run")
	}
	if !r.Canceled || r.TimedOut || r.Killed || r.Signal != "killed" || r.OK() {
		t.Fatalf("got %+v", r)
	}
	if want := "killed by signal killed on shutdown"; r.Describe() != want {
		t.Errorf("Describe() = %q, want %q", r.Describe(), want)
	}
	awaitGone(t, pidFromOutput(t, r.Tail))

	r = run(t, Spec{Argv: []string{sh, "-c", "true"}})
	if !r.OK() {
		t.Fatalf("fresh run after cancel: %+v", r)
	}
	r = runCtx(t, ctx, Spec{Argv: []string{sh, "-c", "echo started"}})
	if !r.Canceled || r.Err == nil || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("cancelled before start: %+v", r)
	}
}

func TestTailTruncation(t *testing.T) {
	t.Parallel()
	// 10000 lines "line N"; only the last 64 bytes are kept.
	script := `i=0; while [ $i -lt 10000 ]; do echo "line $i"; i=$((i+1)); done`
	out := newSignalWriter("never")
	r := run(t, Spec{Argv: []string{sh, "-c", script}, TailBytes: 64, Output: out})
	if !r.OK() {
		t.Fatalf("%+v", r)
	}
	full := out.buf.Bytes()
	if len(r.Tail) != 64 || !bytes.HasSuffix(full, r.Tail) {
		t.Fatalf("tail %q (len %d) is not the end of the output", r.Tail, len(r.Tail))
	}
	if !strings.HasSuffix(string(r.Tail), "line 9999\n") {
		t.Fatalf("tail %q", r.Tail)
	}
}

func TestTailDefaultSize(t *testing.T) {
	t.Parallel()
	r := run(t, Spec{Argv: []string{sh, "-c", `head -c 10000 /dev/zero`}, Env: []string{"PATH=/usr/bin:/bin"}})
	if !r.OK() || len(r.Tail) != DefaultTailBytes {
		t.Fatalf("%+v len %d", r, len(r.Tail))
	}
}

func TestTailRuneBoundary(t *testing.T) {
	t.Parallel()
	// "é" is two bytes; a 5-byte tail of "éééé" cuts one in half.
	r := run(t, Spec{Argv: []string{sh, "-c", `printf 'éééé'`}, TailBytes: 5})
	if !r.OK() {
		t.Fatalf("%+v", r)
	}
	if string(r.Tail) != "éé" || !utf8.Valid(r.Tail) {
		t.Fatalf("tail %q", r.Tail)
	}
}

func TestTailRing(t *testing.T) {
	t.Parallel()
	tl := newTail(4)
	var all []byte
	for _, chunk := range []string{"a", "bc", "", "defgh", "i", "jk", "lmnopqrstu", "v"} {
		tl.Write([]byte(chunk))
		all = append(all, chunk...)
		want := all
		if len(want) > 4 {
			want = want[len(want)-4:]
		}
		if got := tl.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("after %q: got %q, want %q", chunk, got, want)
		}
	}
}
