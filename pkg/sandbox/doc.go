// Package sandbox starts one pipeline run inside Linux namespaces of its
// own, so that a hostile pipeline (a coding agent fed with ticket text
// anyone can write) cannot reach what the daemon can.
//
// What a sandboxed run cannot do:
//   - connect anywhere: it has a network namespace with only lo, so not
//     to Redis, the daemon's listeners, the cloud metadata address or the
//     LAN, and it has no DNS. With Spec.Proxy, 127.0.0.1:ProxyPort inside
//     is bridged to one unix socket of the daemon's choosing (the run's
//     egress proxy); nothing else leaves.
//   - see or signal other processes: it is in a pid namespace of its own
//     with a fresh /proc, so sibling runs, the guard and the daemon have no
//     pid inside; its processes run as a host uid of their own
//     (Spec.HostUID, from LeaseUID), so even a path that leaked would not
//     give it another run's files.
//   - read files it was not given: its root is an empty tmpfs holding only
//     the read-only system directories (DefaultReadOnly), its work
//     directory, a private /tmp, a minimal /dev and /run/agentsmith; the
//     daemon's configuration, state and other runs' work trees are absent,
//     and Spec.Hide masks what lies inside a bound directory.
//   - gain privileges: the pipeline runs as a non-root uid inside (1000 by
//     default) with no capabilities, no_new_privs set and every bind mount
//     nosuid, so set-uid binaries and file capabilities give nothing.
//   - reach the daemon's terminal: the pipeline starts in a session of
//     its own, so it has no controlling terminal, and /dev/tty is not in
//     its /dev; it cannot type commands into an operator's shell with
//     TIOCSTI (a daemon started from a terminal, under script or tmux,
//     would otherwise hand it that terminal).
//   - end its init early: the pipeline may signal pid 1 (it runs as the
//     same uid), but the init forwards SIGTERM, SIGINT and SIGHUP to the
//     pipeline's group and takes and drops every other signal sent with
//     kill, SIGQUIT, SIGABRT, SIGSEGV and SIGBUS included, which Go's
//     runtime would otherwise answer with a goroutine dump or a crash
//     (and so a run with no status).
//   - outlive the run: when the pipeline exits, the sandbox's init (pid 1
//     of the namespace) exits and the kernel kills every process left in
//     the namespace, including those that left the pipeline's process
//     group (setsid, a double fork).
//
// What it does not do (yet):
//   - no /sys is mounted, so tools that read /sys (lscpu, some language
//     runtimes' CPU counting) see none;
//   - no seccomp filter: the whole system call surface of the kernel is
//     reachable, user namespaces included (a kernel bug there is a way out);
//   - no landlock rules;
//   - few resource limits of its own: memory, pids and CPU are the run
//     cgroup's job (pkg/runcg), and the private /tmp and /dev/shm are
//     tmpfs, charged to the writer's memory cgroup. Without controllers,
//     Spec.Nproc caps the run's tasks with RLIMIT_NPROC (per uid and user
//     namespace, so the init's own few threads count too; a run at its
//     cap may leave the init unable to start a thread, which ends the run
//     with no status), and Spec.TmpSize the size of /tmp and of /dev/shm
//     each (by default half of RAM each); memory, CPU and what the work
//     tree and Writable paths take on disk stay unbounded;
//   - a terminal the caller gives the pipeline as stdin, stdout or stderr
//     is the pipeline's to read and write (escape sequences included), and
//     one that is no session's controlling terminal it may make its own
//     (TIOCSCTTY) and type into: hand it pipes or files, never a terminal;
//   - a SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP or SIGSYS queued to pid 1
//     with sigqueue (si_code SI_QUEUE, not kill's SI_USER) still crashes
//     the init: Go's runtime takes it for a fault of its own. The run
//     then ends with no status (Launch.Status ok false), as if killed;
//     nothing outside the run is affected;
//   - Hide masks paths, not files: a hard link to a hidden file elsewhere
//     in a bound tree stays readable;
//   - an unprivileged daemon runs every pipeline as its own uid (the only
//     one it may map), so runs are not separated from each other's files
//     by uid, nor from the daemon's files outside what is bound; and the
//     daemon user's supplementary groups stay (setgroups is denied to an
//     unprivileged user namespace).
//
// How a run starts: the caller builds the pipeline's exec.Cmd as usual,
// Prepare rewrites it to start `EXE sandbox-init` (Init, in the caller's
// binary) in new user, mount, pid, ipc, uts and network namespaces, and
// Started hands the init the Spec over a pipe once the caller has placed
// the process (cgroups). The init builds the root (its /tmp and /dev/shm
// of Spec.TmpSize), brings lo up, starts the proxy bridge, takes every
// signal, drops every capability, sets Spec.Nproc and runs the pipeline
// as its child, in a new session; when the pipeline exits it reports the
// pipeline's wait status on a second pipe (Launch.Status) and exits.
package sandbox
