package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/egress"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// SandboxResult is section 9 (-only sandbox): what the per-run sandbox
// (pkg/sandbox) adds to starting a pipeline.
type SandboxResult struct {
	Measured time.Time    `json:"measured"`
	Runs     int          `json:"runs"`
	Warmup   int          `json:"warmup"`
	HostUID  string       `json:"host_uid"`
	Rows     []SandboxRow `json:"rows"`
	// SandboxMedianDiffMS is the sandbox's median minus the direct one.
	SandboxMedianDiffMS float64 `json:"sandbox_median_diff_ms"`
	// ProxyMedianDiffMS is the sandbox with a proxy socket minus without.
	ProxyMedianDiffMS float64 `json:"proxy_median_diff_ms"`
	// BridgeMedianDiffMS is one refused request through the bridge
	// (inside) minus the same request on the unix socket (outside).
	BridgeMedianDiffMS float64 `json:"bridge_median_diff_ms"`
	Note               string  `json:"note"`
}

// SandboxRow is one way of starting a run, or one request.
type SandboxRow struct {
	What     string  `json:"what"`
	Runs     int     `json:"runs"`
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
}

// sandboxHelperArg makes the bench binary a pipeline inside the sandbox
// (sandboxHelper); sandbox.InitArg makes it the sandbox's init.
const sandboxHelperArg = "bench-sandbox-helper"

// sandboxRequest is what the request rows send: an absolute-form request
// for a host the empty policy does not allow, so the proxy answers 403
// itself, with no DNS lookup and no upstream.
const sandboxRequest = "GET http://refused.invalid/ HTTP/1.1\r\nHost: refused.invalid\r\nConnection: close\r\n\r\n"

// sandboxHelper runs inside a sandbox as its pipeline.
//
//	identity: prints "ppid uid hostname host-uid" (the host uid from /proc/self/uid_map)
//	request NETWORK ADDR: sends sandboxRequest to ADDR, checks the 403, prints the nanoseconds it took
func sandboxHelper(args []string) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "identity":
		host, _ := os.Hostname()
		m, err := os.ReadFile("/proc/self/uid_map")
		f := strings.Fields(string(m))
		if err != nil || len(f) != 3 {
			fmt.Fprintf(os.Stderr, "uid_map %q: %v\n", m, err)
			return 1
		}
		fmt.Printf("%d %d %s %s\n", os.Getppid(), os.Getuid(), host, f[1])
		return 0
	case "request":
		if len(args) != 3 {
			return 2
		}
		d, err := refusedRequest(args[1], args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(d.Nanoseconds())
		return 0
	}
	return 2
}

// refusedRequest sends sandboxRequest on a new connection and reads the
// whole answer, which must be the proxy's 403.
func refusedRequest(network, addr string) (time.Duration, error) {
	t0 := time.Now()
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, sandboxRequest); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte("refused.invalid")) {
		return 0, fmt.Errorf("want the proxy's 403 for refused.invalid, got %s %q", resp.Status, body)
	}
	return d, nil
}

// sandboxBox is what the section's sandboxed runs share: the init binary,
// the host uid, the work directory and the egress proxy's socket.
type sandboxBox struct {
	init    string
	uid     uint32
	workDir string
	sock    string
	refused atomic.Int64
}

func (x *sandboxBox) spec(proxy bool) sandbox.Spec {
	s := sandbox.Spec{HostUID: x.uid, HostGID: x.uid, WorkDir: x.workDir,
		ReadOnly: append(sandbox.DefaultReadOnly(), filepath.Dir(x.init))}
	if proxy {
		s.Proxy = x.sock
	}
	return s
}

var sandboxEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LC_ALL=C"}

// direct runs argv as an exec.Cmd and checks it exited 0.
func (x *sandboxBox) direct(argv ...string) (time.Duration, string, error) {
	var out, stderr bytes.Buffer
	t0 := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = sandboxEnv
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return 0, "", fmt.Errorf("direct %s: %w (stderr %q)", argv[0], err, strings.TrimSpace(stderr.String()))
	}
	return time.Since(t0), out.String(), nil
}

// helperNanos is the request time a request helper printed.
func helperNanos(out string) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("the request helper printed %q", out)
	}
	return time.Duration(n), nil
}

// boxed runs argv in a sandbox (with the proxy socket when proxy is
// set), from Prepare to the pipeline's status, and checks that the
// pipeline itself exited 0 with the init reporting it.
func (x *sandboxBox) boxed(proxy bool, argv ...string) (time.Duration, string, error) {
	var out, stderr bytes.Buffer
	t0 := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	s := x.spec(proxy)
	cmd.Env = append(append([]string(nil), sandboxEnv...), s.ProxyEnv()...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	l, err := sandbox.Prepare(cmd, x.init, s)
	if err != nil {
		return 0, "", err
	}
	defer l.Close()
	if err := cmd.Start(); err != nil {
		return 0, "", fmt.Errorf("start the sandbox: %w", err)
	}
	if err := l.Started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, "", err
	}
	werr := cmd.Wait()
	ws, ok := l.Status()
	d := time.Since(t0)
	if !ok || !ws.Exited() || ws.ExitStatus() != 0 || werr != nil {
		return 0, "", fmt.Errorf("sandboxed %s: status %v ok=%v, init %v, failure %q, stderr %q",
			argv[0], ws, ok, werr, l.Failure(), strings.TrimSpace(stderr.String()))
	}
	return d, out.String(), nil
}

// sandboxCost measures what the sandbox adds to a run: /bin/true started
// directly, in a sandbox, and in a sandbox with an egress proxy socket;
// and one request through the sandbox's proxy bridge against the same
// request straight to the proxy's socket.
func (b *bench) sandboxCost(ctx context.Context) error {
	const runs, warmup = 100, 5
	fmt.Printf("## 9. The sandbox: setup cost per run (/bin/true, %d runs per row, %d warm-up excluded)\n\n", runs, warmup)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The run's uid must exec the init: go run builds below a 0700 directory.
	init, remove, err := sandbox.ReachableExe(self, "")
	if err != nil {
		return err
	}
	defer remove()
	if err := sandbox.Available(init); err != nil {
		b.res.Skipped = append(b.res.Skipped, "sandbox: "+err.Error())
		fmt.Printf("skipped: %v\n\n", err)
		return nil
	}
	base, err := os.MkdirTemp("", "agentsmithd-bench-sandbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	// The run's uid passes through base to its work dir and socket.
	if err := os.Chmod(base, 0o711); err != nil {
		return err
	}
	x := &sandboxBox{init: init, uid: uint32(os.Getuid()), workDir: filepath.Join(base, "work"), sock: filepath.Join(base, "egress.sock")}
	who := fmt.Sprintf("the bench's own uid %d (not root)", x.uid)
	if os.Geteuid() == 0 {
		l, err := sandbox.LeaseUID(sandbox.DefaultRange, "bench-sandbox")
		if err != nil {
			return err
		}
		defer l.Release()
		x.uid = l.UID()
		who = fmt.Sprintf("leased uid %d (root)", x.uid)
	}
	if err := os.Mkdir(x.workDir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(x.workDir, int(x.uid), int(x.uid)); err != nil {
		return err
	}
	ln, err := net.Listen("unix", x.sock)
	if err != nil {
		return err
	}
	if err := os.Chown(x.sock, int(x.uid), int(x.uid)); err != nil {
		_ = ln.Close()
		return err
	}
	if err := os.Chmod(x.sock, 0o600); err != nil {
		_ = ln.Close()
		return err
	}
	proxy := &egress.Proxy{OnRefuse: func(egress.Refusal) { x.refused.Add(1) }}
	served := make(chan error, 1)
	go func() { served <- proxy.Serve(ln) }()
	defer func() { _ = proxy.Close(); _ = ln.Close(); <-served }()

	// The sandboxed runs are in the sandbox: a child of pid 1 (the init,
	// which is pid 1 of a new pid namespace only), the default inside uid
	// and hostname, mapped to x.uid.
	_, out, err := x.boxed(false, init, sandboxHelperArg, "identity")
	if err != nil {
		return err
	}
	want := fmt.Sprintf("1 %d %s %d", sandbox.DefaultUID, sandbox.DefaultHostname, x.uid)
	if got := strings.TrimSpace(out); got != want {
		return fmt.Errorf("the sandboxed run is not where it should be: got %q (ppid uid hostname host-uid), want %q", got, want)
	}

	proxyAddr := "127.0.0.1:" + strconv.Itoa(sandbox.DefaultProxyPort)
	var direct, boxed, proxied, inside, outside []time.Duration
	for i := range runs + warmup {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Interleaved, so drift on the shared machine hits every row alike.
		d1, _, err := x.direct("/bin/true")
		if err != nil {
			return err
		}
		d2, _, err := x.boxed(false, "/bin/true")
		if err != nil {
			return err
		}
		d3, _, err := x.boxed(true, "/bin/true")
		if err != nil {
			return err
		}
		// The same helper process, cold, times one request from inside
		// (through the bridge) and from outside (on the socket itself).
		_, out, err := x.boxed(true, init, sandboxHelperArg, "request", "tcp", proxyAddr)
		if err != nil {
			return err
		}
		d4, err := helperNanos(out)
		if err != nil {
			return fmt.Errorf("request through the bridge: %w", err)
		}
		_, out, err = x.direct(init, sandboxHelperArg, "request", "unix", x.sock)
		if err != nil {
			return err
		}
		d5, err := helperNanos(out)
		if err != nil {
			return fmt.Errorf("request on the proxy socket: %w", err)
		}
		if i < warmup {
			continue
		}
		direct, boxed, proxied = append(direct, d1), append(boxed, d2), append(proxied, d3)
		inside, outside = append(inside, d4), append(outside, d5)
	}
	// Every request row reached the bench's proxy: one refusal each
	// (warm-up included), none lost or answered by something else.
	if got, want := x.refused.Load(), int64(2*(runs+warmup)); got != want {
		return fmt.Errorf("the proxy refused %d requests, want %d", got, want)
	}

	msf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	row := func(what string, ds []time.Duration) SandboxRow {
		return SandboxRow{What: what, Runs: len(ds), MedianMS: msf(percentile(ds, 0.5)), P99MS: msf(percentile(ds, 0.99))}
	}
	r := &SandboxResult{Measured: time.Now().UTC(), Runs: runs, Warmup: warmup, HostUID: who,
		Rows: []SandboxRow{
			row("/bin/true, exec.Cmd (no sandbox)", direct),
			row("/bin/true in a sandbox", boxed),
			row("/bin/true in a sandbox with an egress proxy socket", proxied),
			row("one refused request through the sandbox's bridge (dial to 403, timed by a helper inside)", inside),
			row("the same request on the proxy's unix socket (the same helper outside, no bridge)", outside),
		},
		Note: "a run is Prepare → cmd.Start → Started → cmd.Wait → Status (exec.Command → Run without a sandbox); " +
			"one uid lease, work dir and egress proxy serve every run (the daemon makes them per run; not timed here); " +
			"every sandboxed run's pipeline exited 0 as its init reported, and the proxy refused every request"}
	r.SandboxMedianDiffMS = r.Rows[1].MedianMS - r.Rows[0].MedianMS
	r.ProxyMedianDiffMS = r.Rows[2].MedianMS - r.Rows[1].MedianMS
	r.BridgeMedianDiffMS = r.Rows[3].MedianMS - r.Rows[4].MedianMS
	b.res.Sandbox = r

	fmt.Printf("Host uid of the runs: %s; %d CPUs.\n\n", who, b.res.CPUs)
	fmt.Println("| run | median | p99 |")
	fmt.Println("|---|---:|---:|")
	for _, w := range r.Rows {
		fmt.Printf("| %s | %.2f ms | %.2f ms |\n", w.What, w.MedianMS, w.P99MS)
	}
	fmt.Println()
	fmt.Printf("Median difference: sandbox − direct %+.2f ms; proxy socket − none %+.2f ms; request through the bridge − on the socket %+.2f ms.\n\n",
		r.SandboxMedianDiffMS, r.ProxyMedianDiffMS, r.BridgeMedianDiffMS)
	fmt.Printf("%s.\n\n", strings.ToUpper(r.Note[:1])+r.Note[1:])
	return nil
}
