package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// resolveCommands makes a relative pipeline command (one with a slash, such
// as ./pipelines/implement.sh) absolute against baseDir, the config file's
// directory, like secret files. Without this the command would be looked up
// in the per-ticket work dir, where it never is. A bare name (sh, make) is
// left for PATH. Parse (baseDir "") leaves commands as written.
func (c *Config) resolveCommands(baseDir string) {
	for i := range c.Projects {
		pl := &c.Projects[i].Pipeline
		pl.commandDir = baseDir
		resolveArgv0(pl.Command, baseDir)
		resolveArgv0(pl.PersistCommand, baseDir)
		for k := range pl.Stages {
			resolveArgv0(pl.Stages[k].Command, baseDir)
		}
		for _, o := range c.Projects[i].Overrides {
			resolveArgv0(o.Command, baseDir)
		}
	}
}

func resolveArgv0(argv []string, baseDir string) {
	if baseDir == "" || len(argv) == 0 || !strings.Contains(argv[0], "/") || filepath.IsAbs(argv[0]) {
		return
	}
	argv[0] = filepath.Join(baseDir, argv[0])
}

// CommandDir is the directory relative commands were resolved against (the
// config file's), or "" for a config from Parse. It is named when a command
// cannot be found, so an operator sees where the daemon looked.
func (pl *Pipeline) CommandDir() string { return pl.commandDir }

// CheckCommands reports every pipeline.command and persist_command that
// does not name an executable file, each error naming where it looked.
// It is separate from Load because only replicas that run pipelines (and
// validate) need the commands; agentsmithctl and receivers load the same
// file on machines that may not have them.
func (c *Config) CheckCommands() error {
	var errs Errors
	for i := range c.Projects {
		pl := &c.Projects[i].Pipeline
		path := fmt.Sprintf("projects[%d].pipeline", i)
		if msg := checkCommand(pl.Command, pl); msg != "" {
			errs.add(path+".command[0]", msg)
		}
		if msg := checkCommand(pl.PersistCommand, pl); msg != "" {
			errs.add(path+".persist_command[0]", msg)
		}
		for k, st := range pl.Stages {
			if msg := checkCommand(st.Command, pl); msg != "" {
				errs.add(fmt.Sprintf("%s.stages[%d].command[0]", path, k), msg)
			}
		}
		for k, o := range c.Projects[i].Overrides {
			if msg := checkCommand(o.Command, pl); msg != "" {
				errs.add(fmt.Sprintf("projects[%d].overrides[%d].command[0]", i, k), msg)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkCommand returns a complaint about argv[0] or "".
func checkCommand(argv []string, pl *Pipeline) string {
	if len(argv) == 0 || argv[0] == "" {
		return ""
	}
	name := argv[0]
	if strings.Contains(name, "/") {
		msg := executableProblem(name)
		if msg == "" {
			return ""
		}
		if joined := joinedArgs(name, pl.commandDir); joined != "" {
			return joined
		}
		if pl.commandDir != "" && strings.HasPrefix(name, pl.commandDir+string(filepath.Separator)) {
			msg += fmt.Sprintf(" (relative commands resolve against the config file's directory %s)", pl.commandDir)
		}
		return msg
	}
	dirs := pipelinePath(pl)
	for _, dir := range filepath.SplitList(dirs) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if executableProblem(filepath.Join(dir, name)) == "" {
			return ""
		}
	}
	if joined := joinedArgs(name, ""); joined != "" {
		return joined
	}
	return fmt.Sprintf("%s: no executable of that name in the pipeline's PATH (%s); write ./%s for a file beside the config", name, dirs, name)
}

// joinedArgs explains a command written as one list item holding the
// program and its flags (["./implement.sh --fast"]), which runs no shell
// and so names a file "implement.sh --fast"; "" when name does not look so.
func joinedArgs(name, commandDir string) string {
	words := strings.Fields(name)
	if len(words) < 2 || !slices.ContainsFunc(words[1:], func(w string) bool { return strings.HasPrefix(w, "-") }) {
		return ""
	}
	if rel, ok := strings.CutPrefix(words[0], commandDir+string(filepath.Separator)); ok && commandDir != "" {
		words[0] = "./" + rel // as written in the config
	}
	return fmt.Sprintf("%q is one list item, and no shell splits it: arguments are separate list items, as in [%s]",
		strings.Join(words, " "), strings.Join(words, ", "))
}

// pipelinePath is the PATH a pipeline sees: pipeline.env's, else the
// daemon's (lifecycle passes the daemon's PATH through).
func pipelinePath(pl *Pipeline) string {
	if p, ok := pl.Env["PATH"]; ok {
		return p
	}
	return os.Getenv("PATH")
}

// executableProblem returns why file cannot be run, or "".
func executableProblem(file string) string {
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return file + " does not exist"
	case err != nil:
		return fmt.Sprintf("cannot stat %s: %s", file, ioReason(err))
	case fi.IsDir():
		return file + " is a directory"
	case fi.Mode()&0o111 == 0:
		return file + " is not executable (chmod +x)"
	}
	return ""
}

// Where says, for a start failure's comment, where the command was looked
// for.
func (pl *Pipeline) Where(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	if strings.Contains(argv[0], "/") {
		if pl.commandDir != "" {
			return fmt.Sprintf("looked for %s; relative commands resolve against the config file's directory %s", argv[0], pl.commandDir)
		}
		return "looked for " + argv[0]
	}
	return fmt.Sprintf("looked for %s in the pipeline's PATH %s", argv[0], pipelinePath(pl))
}
