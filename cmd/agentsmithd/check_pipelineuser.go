package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/statustoken"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// checkPipelineUser warns when the project's pipeline, untrusted code,
// could read the daemon's secret files: it runs as the daemon's own user
// (no pipeline.run_as, or run_as naming that user), who can read every one
// of them, or as a user the files' modes let in. Secrets from the
// environment are not listed: a pipeline gets only PATH, HOME and the like
// of the daemon's environment, and the daemon is not dumpable.
func checkPipelineUser(cfg *config.Config, cfgPath string, pc *config.Project) platforms.CheckResult {
	const name = "pipeline user"
	files := secretFiles(cfg, cfgPath)
	if cfg.Sandbox.On() {
		// The sandbox row says whether the sandbox starts; in it these
		// files are hidden, whoever owns them.
		return platforms.OK(name, "pipelines run in a sandbox, where none of the %d secret files is seen", len(files))
	}
	cred, err := pc.Pipeline.RunAsCredential()
	if err != nil {
		return platforms.Fail(name, "pipeline.run_as: "+err.Error(), "fix pipeline.run_as (see `agentsmithd validate`)")
	}
	euid := os.Geteuid()
	if cred == nil || int(cred.Uid) == euid {
		return platforms.Warn(name, fmt.Sprintf("pipelines run as uid %d, the daemon's own user, and can read %s", euid, strings.Join(files, ", ")),
			"set pipeline.run_as to another user (the daemon then runs as root) and keep these files 0600, owned by the daemon's user")
	}
	var readable []string
	for _, f := range files {
		if readableBy(f, cred) {
			readable = append(readable, f)
		}
	}
	if len(readable) > 0 {
		return platforms.Warn(name, fmt.Sprintf("pipelines run as uid %d, which can read %s", cred.Uid, strings.Join(readable, ", ")),
			"chmod 600 them and chown them to the daemon's user")
	}
	return platforms.OK(name, "pipelines run as uid %d, which can read none of the %d secret files", cred.Uid, len(files))
}

// secretFiles lists every file the config takes a secret from, and the
// admin token's file when the config names no status.token (serve keeps
// it beside the config), as absolute paths.
func secretFiles(cfg *config.Config, cfgPath string) []string {
	base := filepath.Dir(cfgPath)
	var files []string
	add := func(p string) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	walkSecrets(reflect.ValueOf(cfg), func(s config.Secret) {
		if s.File != "" {
			add(s.File)
		}
	})
	if !cfg.Status.Token.IsSet() {
		add(statustoken.Path(cfgPath))
	}
	return files
}

var secretType = reflect.TypeOf(config.Secret{})

// walkSecrets calls fn with every config.Secret reachable from v through
// exported struct fields, pointers, slices and maps.
func walkSecrets(v reflect.Value, fn func(config.Secret)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkSecrets(v.Elem(), fn)
		}
	case reflect.Struct:
		if v.Type() == secretType {
			fn(v.Interface().(config.Secret))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkSecrets(v.Field(i), fn)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkSecrets(v.Index(i), fn)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walkSecrets(v.MapIndex(k), fn)
		}
	}
}

// readableBy reports whether the file's mode lets cred read it (its
// directories' permissions are not looked at). A file that cannot be
// looked at is not counted.
func readableBy(path string, cred *syscall.Credential) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == cred.Uid:
		return perm&0o400 != 0
	case st.Gid == cred.Gid:
		return perm&0o040 != 0
	}
	return perm&0o004 != 0
}
