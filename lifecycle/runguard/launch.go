package runguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Launcher starts pipelines under guards. The zero Launcher is unusable:
// Exe must name a binary whose Args run Main (agentsmithd: "guard").
type Launcher struct {
	// Exe is the guard binary, an absolute path (os.Executable).
	Exe string
	// Args follow Exe on the guard's command line; default ["guard"].
	Args []string
	// Redis is how guards reach Redis.
	Redis Redis
	// Check is every guard's check interval (DefaultCheck when 0).
	Check time.Duration
	// Instance and Presence are the daemon's instance id and liveness
	// key's trust window (Order.Instance): "" leaves the key unwatched.
	Instance string
	Presence trust.Window
}

// daemonPID is the pid a guard expects as its parent; tests replace it to
// play a daemon that is gone.
var daemonPID = os.Getpid

// Wrap returns spec rewritten so that a guard runs the pipeline for the run
// of ref owned by token, and a function the caller must call once
// procrun.Run has returned: it closes the pipes and returns why the guard
// did not start the pipeline ("" when it did, or never ran), which the
// guard writes to its report pipe (fd 4). hb is the run
// heartbeat's TTL and trust window, as the executor uses them. The guard gets the pipeline's environment, stdin,
// working directory and output unchanged; a RunAs credential moves to the
// guard's orders, so the guard stays the daemon's user (its memory holds
// the Redis password) and only the pipeline runs as the other user.
func (l *Launcher) Wrap(spec procrun.Spec, ref platforms.Ref, token string, hb trust.Window) (procrun.Spec, func() string, error) {
	none := func() string { return "" }
	if l.Exe == "" {
		return spec, none, errors.New("run guard: no guard binary")
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return spec, none, errors.New("run guard: empty command")
	}
	path, err := procrun.LookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return spec, none, err
	}
	o := Order{Redis: l.Redis, Ref: ref, Token: token, Check: l.Check, Heartbeat: hb,
		Instance: l.Instance, Presence: l.Presence, Parent: daemonPID(), Path: path, Argv: spec.Argv, Credential: spec.Credential,
		Cgroup: spec.Cgroups != nil, Sandbox: spec.Sandbox}
	if spec.Sandbox != nil {
		o.SandboxExe = spec.SandboxExe
	}
	b, err := json.Marshal(o)
	if err != nil {
		return spec, none, fmt.Errorf("run guard: encode orders: %w", err)
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		return spec, none, fmt.Errorf("run guard: report pipe: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		_, _ = rr.Close(), rw.Close()
		return spec, none, fmt.Errorf("run guard: orders pipe: %w", err)
	}
	// Written from a goroutine once the guard has started and joined its
	// cgroups (procrun's Started): orders larger than the pipe's buffer
	// would otherwise block until the guard reads them, and a guard that
	// had its orders sooner could start the pipeline outside its v1
	// cgroups. A guard that never started gets none: the cleanup closes
	// r and gives up.
	written, started, gaveUp := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(written)
		defer w.Close()
		select {
		case <-started:
		case <-gaveUp:
			return
		}
		_, _ = w.Write(b) // EPIPE when the guard died before reading
	}()
	var once sync.Once
	args := l.Args
	if args == nil {
		args = []string{"guard"}
	}
	out := spec
	out.Argv = append([]string{l.Exe}, args...)
	out.Credential = nil
	out.Sandbox, out.SandboxExe = nil, ""
	out.ExtraFiles = []*os.File{r, rw}
	prev := spec.Started
	out.Started = func() {
		once.Do(func() { close(started) })
		if prev != nil {
			prev()
		}
	}
	return out, func() string {
		_ = r.Close()
		close(gaveUp)
		<-written
		// The guard has exited, and only it held the report's write end
		// (close-on-exec: never the pipeline): the read ends at EOF.
		_ = rw.Close()
		b, _ := io.ReadAll(io.LimitReader(rr, maxReport))
		_ = rr.Close()
		return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	}, nil
}

// maxReport bounds what the daemon reads of a guard's report.
const maxReport = 4 << 10
