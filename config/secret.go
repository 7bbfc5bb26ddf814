package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap/zapcore"
)

// Secret names where a credential comes from: an environment variable or a
// file. The config holds only the name; Parse resolves the value, which no
// String, GoString, log encoding or error ever shows.
type Secret struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`

	value string
	// YAML paths for error messages: the long form ("token.env") or the
	// shorthand key ("token_env") the operator actually wrote.
	envField, fileField string
}

// Value is the resolved secret; "" when unset.
func (s Secret) Value() string { return s.value }

// IsSet reports whether the config names a source for the secret.
func (s Secret) IsSet() bool { return s.Env != "" || s.File != "" }

// String names the source, never the value.
func (s Secret) String() string {
	switch {
	case s.Env != "" && s.File != "":
		return "env:" + s.Env + "+file:" + s.File
	case s.Env != "":
		return "env:" + s.Env
	case s.File != "":
		return "file:" + s.File
	}
	return "<unset>"
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return "config.Secret(" + s.String() + ")" }

// MarshalLogObject keeps zap from logging the value.
func (s Secret) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	if s.Env != "" {
		enc.AddString("env", s.Env)
	}
	if s.File != "" {
		enc.AddString("file", s.File)
	}
	return nil
}

// NewSecret returns a resolved secret, for tests and callers that build a
// Config in code.
func NewSecret(env, file, value string) Secret { return Secret{Env: env, File: file, value: value} }

// at records the paths errors about s should name.
func (s *Secret) at(envField, fileField string) {
	s.envField, s.fileField = envField, fileField
}

// resolve reads the value. Errors name the source but never the content;
// an env variable that is set but empty counts as not set, as does a file
// holding only whitespace.
func (s *Secret) resolve(path string, lookupEnv func(string) (string, bool), baseDir string, errs *Errors) {
	switch {
	case s.Env != "" && s.File != "":
		errs.add(path, "set only one of env and file")
	case s.Env != "":
		v, ok := lookupEnv(s.Env)
		if !ok || v == "" {
			errs.add(s.envField, s.Env+" is not set")
			return
		}
		s.value = v
	case s.File != "":
		p := s.File
		if baseDir != "" && !filepath.IsAbs(p) {
			p = filepath.Join(baseDir, p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			errs.add(s.fileField, fmt.Sprintf("cannot read %s: %s", p, ioReason(err)))
			return
		}
		v := strings.TrimSpace(string(data)) // files usually end in a newline
		if v == "" {
			errs.add(s.fileField, p+" is empty")
			return
		}
		s.value = v
	}
}

// ioReason is the OS reason without the path the caller already printed.
func ioReason(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// oneOf merges a secret that may be written in long form or with shorthand
// keys into dst, reporting conflicting spellings.
func oneOf(dst *Secret, path string, errs *Errors, forms ...Secret) {
	var set []Secret
	for _, f := range forms {
		if f.IsSet() {
			set = append(set, f)
		}
	}
	if len(set) > 1 {
		errs.add(path, "set only one of "+strings.Join(formNames(path), ", "))
		return
	}
	if len(set) == 1 {
		*dst = set[0]
	}
}

func formNames(path string) []string {
	base := path[strings.LastIndexByte(path, '.')+1:]
	return []string{base, base + "_env", base + "_file"}
}

// SecretValues are the resolved values of every secret p holds: its
// tracker token, GitHub App key, webhook secrets, work branch token and
// pipeline secrets. pkg/redact keeps them out of everything the daemon
// posts, logs or shows of the project's pipeline output.
func (p *Project) SecretValues() []string {
	out := []string{p.Token.Value(), p.GitHubApp.PrivateKey.Value(), p.Workspace.Git.Token.Value()}
	for _, s := range p.Webhook.Secrets {
		out = append(out, s.Value())
	}
	for _, s := range p.Pipeline.Secrets {
		out = append(out, s.From.Value())
	}
	return out
}
