// Command agentsmithd is the lifecycle daemon: it turns trigger-labelled
// tracker tickets into exactly one pipeline run each and shows the run's
// state on the ticket as labels.
//
//	agentsmithd serve -c config.yaml [--roles receiver,consumer] [--listen :8080] [--instance-id a]
//	agentsmithd validate -c config.yaml
//	agentsmithd check -c config.yaml [-o json] [--receiver-url URL]
//	agentsmithd print-config -c config.yaml   (or serve --print-config)
//	agentsmithd demo [--keep]
//	agentsmithd version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/buildinfo"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/statustoken"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/nodump"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage lists the subcommands: `agentsmithd` alone and `-h` print it.
const usage = `usage: agentsmithd COMMAND [flags]

commands:
  serve         run the daemon: agentsmithd serve -c config.yaml [--roles r1,r2] [--listen ADDR] [--instance-id ID]
  validate      check a config and the pipeline commands it names, print every problem, exit non-zero on any
  check         check every project against its tracker and Redis without writing: agentsmithd check -c config.yaml [-o json]
  print-config  print the effective config, every default filled in, secrets named by source only
  demo          the offline demo: trackersim, Redis and the daemon in one process (--keep to stay up)
  version       print the version, commit and Go version

agentsmithd COMMAND -h shows a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if args[0] == "guard" {
		// Hidden: the daemon starts it as each pipeline's parent (docs/architecture.md
		// "Run guard"); it is not for people.
		return guard(stderr)
	}
	if args[0] == sandbox.InitArg {
		// Hidden: the first process of each pipeline's sandbox
		// (pkg/sandbox), started by the daemon or the run guard.
		return sandbox.Init()
	}
	cmd := "serve" // flags first: `agentsmithd -c config.yaml` means serve
	if !strings.HasPrefix(args[0], "-") || isHelp(args[0]) {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cmd == "serve" || cmd == "demo" {
		// Before any secret is read or pipeline started: a pipeline runs as
		// the daemon's user and could otherwise read /proc/$PPID/environ
		// and /proc/$PPID/mem (docs/security.md "Security").
		if err := nodump.Enable(); err != nil {
			fmt.Fprintln(stderr, "agentsmithd: cannot make the process non-dumpable:", err)
			return 1
		}
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, stdout, stderr)
	case "validate":
		return validate(args, stdout, stderr)
	case "check":
		return check(ctx, args, stdout, stderr)
	case "print-config":
		return printConfig(args, stdout, stderr)
	case "demo":
		return demo(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "agentsmithd", buildinfo.Get())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "agentsmithd: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// guard is `agentsmithd guard`, the run guard of one pipeline
// (lifecycle/runguard): its orders, Redis password included, come on fd 3
// from the daemon that started it, which reads on fd 4 why the guard did
// not start the pipeline.
func guard(stderr io.Writer) int {
	// Nil when fd 4 is no pipe (a daemon older than the report pipe).
	report := runguard.ReportFile(4)
	// Before the orders are read: the pipeline runs as the guard's user
	// unless run_as says otherwise, and must not read the password from
	// /proc/$PPID/mem.
	if err := nodump.Enable(); err != nil {
		why := "cannot make the process non-dumpable: " + err.Error()
		fmt.Fprintln(stderr, "agentsmithd guard:", why)
		if report != nil {
			_, _ = io.WriteString(report, why)
		}
		return runguard.ExitOwnFailure
	}
	return runguard.Main(os.NewFile(3, "orders"), report, stderr)
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "agentsmithd.yaml", "config file")
	roles := fs.String("roles", "", "comma-separated roles to run (receiver,poller,consumer,housekeeping); default: config's roles")
	logFormat := fs.String("log-format", "json", "json or console")
	show := fs.Bool("print-config", false, "print the effective config (defaults applied, secrets named by source only) and exit")
	listen := fs.String("listen", "", "HTTP listen address (host:port); overrides the config's listen")
	instance := fs.String("instance-id", "", "this replica's instance id; overrides the config's instance_id")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		printConfigError(stderr, err)
		return 1
	}
	if *roles != "" {
		cfg.Roles = strings.Split(*roles, ",")
	}
	if err := overrideFlags(cfg, *listen, *instance); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *show {
		return writeConfig(cfg, stdout, stderr)
	}
	if cfg.HasRole(config.RoleConsumer) {
		// Only replicas that run pipelines need the commands present.
		if err := cfg.CheckCommands(); err != nil {
			printConfigError(stderr, err)
			return 1
		}
	}
	log := newLogger(*logFormat, stderr)
	defer func() { _ = log.Sync() }()
	redisconn.UseZap(log)
	if len(cfg.Redis.Addrs) == 0 {
		fmt.Fprintln(stderr, "agentsmithd: redis.addr (or redis.addrs) is empty: serve needs a Redis server (the embedded one is for `agentsmithd demo` only)")
		return 1
	}
	if err := ensureStatusToken(cfg, *path, log); err != nil {
		fmt.Fprintln(stderr, "agentsmithd:", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "agentsmithd: find own binary for the run guards:", err)
		return 1
	}
	// Projects that name their repositories by pattern become one project
	// per repository before anything is built from them; the daemon keeps
	// the patterns to list them again while it runs.
	configured := cfg.Projects
	if _, err := discovery.Expand(ctx, cfg, discovery.Options{Logger: log.Named("discovery")}); err != nil {
		log.Error("discover repositories", zap.Error(err))
		return 1
	}
	opts := daemon.Options{Logger: log, GuardExe: exe, Configured: configured}
	if cfg.HasRole(config.RoleConsumer) && cfg.Sandbox.On() {
		// The sandbox's init starts as a run's uid, which must reach the
		// binary; without a sandbox this replica runs no pipeline.
		init, remove, err := sandbox.ReachableExe(exe, "")
		if err == nil {
			defer remove()
			err = sandbox.Available(init)
		}
		if err == nil {
			err = sandboxReachable(cfg)
		}
		if err != nil {
			fmt.Fprintf(stderr, "agentsmithd: pipelines must run in a sandbox (sandbox.mode: on) and it cannot start here: %v\n"+
				"  fix the host as the line above says, or run pipelines unsandboxed with sandbox: {mode: off} (docs/security.md)\n", err)
			return 1
		}
		opts.SandboxExe, opts.SandboxHide = init, sandboxHide(cfg, *path)
	}
	d, err := daemon.New(cfg, opts)
	if err != nil {
		log.Error("build daemon", zap.Error(err))
		return 1
	}
	if err := d.Run(ctx); err != nil {
		log.Error("daemon stopped", zap.Error(err))
		return 1
	}
	return 0
}

// sandboxReachable checks that a root daemon's runs, each a uid of its
// own, can reach what the sandbox binds at its own path: the work root
// (the daemon creates it, 0711, when missing), each pipeline's directory,
// each mount. A daemon that is not root runs sandboxes as itself.
func sandboxReachable(cfg *config.Config) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := os.MkdirAll(cfg.Consumer.WorkDir, 0o711); err != nil {
		return fmt.Errorf("consumer.work_dir: %w", err)
	}
	paths := map[string]string{cfg.Consumer.WorkDir: "consumer.work_dir"}
	for _, m := range cfg.Sandbox.Mounts {
		paths[m.Path] = "sandbox.mounts"
	}
	for i, pc := range cfg.Projects {
		cmds := [][]string{pc.Pipeline.Command, pc.Pipeline.PersistCommand}
		for _, st := range pc.Pipeline.Stages {
			cmds = append(cmds, st.Command)
		}
		for _, c := range cmds {
			if len(c) > 0 && filepath.IsAbs(c[0]) {
				paths[filepath.Dir(c[0])] = fmt.Sprintf("projects[%d].pipeline", i)
			}
		}
		for _, m := range pc.Pipeline.Sandbox.Mounts {
			paths[m.Path] = fmt.Sprintf("projects[%d].pipeline.sandbox.mounts", i)
		}
	}
	for p, setting := range paths {
		if blocked := sandbox.Unreachable(p); blocked != "" {
			return fmt.Errorf("%s: %s cannot be reached by the runs' uids: %s does not let others pass (chmod o+x it, or move %s)", setting, p, blocked, setting)
		}
	}
	return nil
}

// sandboxHide are the daemon's files no run may see, where a sandbox shows
// the directory they lie in: the config, every secret file, the status
// token's file.
func sandboxHide(cfg *config.Config, cfgPath string) []string {
	hide := secretFiles(cfg, cfgPath)
	base := filepath.Dir(cfgPath)
	// Key files named by path rather than as secrets: the Redis client's
	// TLS key and certificate, each project's push key.
	paths := []string{cfgPath, cfg.Redis.TLS.KeyFile, cfg.Redis.TLS.CertFile}
	for _, pc := range cfg.Projects {
		paths = append(paths, pc.Workspace.Git.SSHKeyFile)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			hide = append(hide, abs)
		}
	}
	return hide
}

// ensureStatusToken gives a config without status.token the token in the
// file beside it (internal/statustoken), creating it on the first start:
// the admin listener authenticates every request, loopback included. The
// log names the file, never the token.
func ensureStatusToken(cfg *config.Config, cfgPath string, log *zap.Logger) error {
	if cfg.Status.Token.IsSet() {
		return nil
	}
	path, err := filepath.Abs(statustoken.Path(cfgPath))
	if err != nil {
		return fmt.Errorf("status token: %w", err)
	}
	token, created, err := statustoken.Ensure(path)
	if err != nil {
		return fmt.Errorf("%w (or set status.token: {token_file: PATH})", err)
	}
	cfg.Status.Token = config.NewSecret("", path, token)
	if created {
		log.Info("created the admin listener's token: log in to /status with it, scrape /metrics with it as a bearer token; "+
			"agentsmithctl status-token prints it", zap.String("file", path))
	}
	return nil
}

// overrideFlags applies --listen and --instance-id over the config, with the
// checks the config's own fields get.
func overrideFlags(cfg *config.Config, listen, instance string) error {
	if listen != "" {
		if _, _, err := net.SplitHostPort(listen); err != nil {
			return fmt.Errorf(`--listen %q: expected host:port such as ":8080"`, listen)
		}
		cfg.Listen = listen
	}
	if instance != "" {
		if strings.ContainsFunc(instance, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
			return fmt.Errorf("--instance-id %q: must not contain spaces or control characters", instance)
		}
		cfg.InstanceID = instance
	}
	return nil
}

func validate(args []string, stdout, stderr io.Writer) int {
	cfg, path, code := loadOnly("validate", args, stderr)
	if cfg == nil {
		return code
	}
	if err := cfg.CheckCommands(); err != nil {
		printConfigError(stderr, err)
		return 1
	}
	projects := "projects"
	if len(cfg.Projects) == 1 {
		projects = "project"
	}
	fmt.Fprintf(stdout, "%s: ok (%d %s, roles %s)\n", path, len(cfg.Projects), projects, strings.Join(cfg.Roles, ","))
	return 0
}

// printConfig prints the effective config: what serve would run with, every
// default filled in, each secret shown as the env var or file it is read
// from and never as its value.
func printConfig(args []string, stdout, stderr io.Writer) int {
	cfg, _, code := loadOnly("print-config", args, stderr)
	if cfg == nil {
		return code
	}
	return writeConfig(cfg, stdout, stderr)
}

// loadOnly parses the -c flag (and any flags a command adds with extra)
// of a command that only reads the config and loads it; on failure it
// returns a nil config and the exit code.
func loadOnly(cmd string, args []string, stderr io.Writer, extra ...func(*flag.FlagSet)) (*config.Config, string, int) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "agentsmithd.yaml", "config file")
	for _, f := range extra {
		f(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, "", 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		printConfigError(stderr, err)
		return nil, "", 1
	}
	return cfg, *path, 0
}

func writeConfig(cfg *config.Config, stdout, stderr io.Writer) int {
	out, err := config.Marshal(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	_, _ = stdout.Write(out)
	return 0
}

// printConfigError prints every field error on its own line.
func printConfigError(w io.Writer, err error) {
	var errs config.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Fprintln(w, e.Error())
		}
		return
	}
	fmt.Fprintln(w, err)
}

func newLogger(format string, w io.Writer) *zap.Logger {
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if format == "console" {
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), zap.InfoLevel))
}
