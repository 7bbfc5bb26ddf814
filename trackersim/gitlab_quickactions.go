package trackersim

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// GitLab quick actions (https://docs.gitlab.com/user/project/quick_actions/):
// GitLab executes the quick actions of a note created or edited through the
// API, as the note's author, and removes their lines from the stored body
// (Notes::CreateService, Notes::UpdateService). A note that held nothing but
// quick actions is not kept: the API answers 202 with {"commands_changes",
// "summary"} instead of the note (lib/api/helpers/notes_helpers.rb
// process_note_creation_result; gitlab4j/gitlab4j-api#1273 shows the answer
// to a "/draft /label" note). The sim models this so a test catches a
// daemon that posts a pipeline's "/close" where GitLab would run it.

// glQuickActionRE ports Gitlab::QuickActions::Extractor#commands_regex
// (lib/gitlab/quick_actions/extractor.rb, flags "mix": "." matches newlines,
// case-insensitive): a command is "/" at the very start of a line (no
// leading space), a known name, then a space and its argument; text the
// extractor takes for a code block ("```" at a line start up to the next
// line that is exactly "```"), inline code spanning lines, an HTML block or
// a ">>>" quote is skipped. The first alternative that matches at the
// leftmost position wins, in Ruby's gsub as in Go's regexp. These skip
// rules are not CommonMark's and have changed between GitLab versions
// (inline code is a later addition), so nothing the daemon posts may rely
// on a fence to keep a line from being a command.
var glQuickActionRE = regexp.MustCompile("(?msi)" +
	"(?P<code>^```.+?\\n```$)" +
	"|(?P<inline>^.*`\\n*.+?\\n*`$)" +
	"|(?P<html>^<[^>]+?>\\n.+?\\n</[^>]+?>$)" +
	"|(?P<quote>^>>>.+?\\n>>>$)" +
	"|(?:^/(?P<cmd>" + strings.Join(glQuickActionNames, "|") + ")(?: (?P<arg>[^\\n]*))?(?:\\s*\\n|$))")

// glQuickActionNames are the issue quick actions the sim executes (names
// and aliases from lib/gitlab/quick_actions/issue_actions.rb and
// issuable_actions.rb). /draft is a merge request action: on an issue GitLab
// leaves it as text, and so does the sim. Longest first, so "relabel" is not
// read as "re…" of something shorter.
var glQuickActionNames = []string{"remove_label", "unlabel", "relabel", "reopen", "labels", "label", "title", "close", "clone", "move"}

// glQuickAction is one extracted command.
type glQuickAction struct{ name, arg string }

// glExtractQuickActions is body without its quick-action lines, and the
// commands in order, as GitLab's extractor finds them ("\r" removed,
// trailing space trimmed).
func glExtractQuickActions(body string) (string, []glQuickAction) {
	body = strings.ReplaceAll(body, "\r", "")
	var cmds []glQuickAction
	icmd, iarg := glQuickActionRE.SubexpIndex("cmd"), glQuickActionRE.SubexpIndex("arg")
	out := glQuickActionRE.ReplaceAllStringFunc(body, func(m string) string {
		sub := glQuickActionRE.FindStringSubmatch(m)
		if sub[icmd] == "" {
			return m // a skipped block, kept as written
		}
		cmds = append(cmds, glQuickAction{name: strings.ToLower(sub[icmd]), arg: strings.TrimSpace(sub[iarg])})
		return ""
	})
	return strings.TrimRight(out, " \t\n"), cmds
}

// glLabelArgs reads a label command's argument: ~name, ~"two words", or
// bare names, separated by spaces.
func glLabelArgs(arg string) []string {
	var out []string
	for arg = strings.TrimSpace(arg); arg != ""; arg = strings.TrimSpace(arg) {
		arg = strings.TrimPrefix(arg, "~")
		var name string
		if strings.HasPrefix(arg, `"`) {
			end := strings.IndexByte(arg[1:], '"')
			if end < 0 {
				name, arg = arg[1:], ""
			} else {
				name, arg = arg[1:end+1], arg[end+2:]
			}
		} else {
			name, arg, _ = strings.Cut(arg, " ")
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// glRunQuickActions executes cmds on issue n of c.repo as c.by, the note's
// author (the sim checks no per-command permission), and returns GitLab's
// commands_changes (with label names where GitLab gives label ids) and
// summary.
func (s *Sim) glRunQuickActions(c *glCall, n int, cmds []glQuickAction) (map[string]any, []string, error) {
	var u update
	changes := map[string]any{}
	var summary []string
	var moveTo, cloneTo string
	move, clone := false, false
	var remove []string
	for _, q := range cmds {
		switch q.name {
		case "close", "reopen":
			open := q.name == "reopen"
			u.Open = &open
			changes["state_event"] = map[bool]string{true: "reopen", false: "close"}[open]
			summary = append(summary, map[bool]string{true: "Reopened this issue.", false: "Closed this issue."}[open])
		case "title":
			if q.arg != "" {
				t := q.arg
				u.Title = &t
				changes["title"] = t
				summary = append(summary, fmt.Sprintf("Changed the title to %q.", t))
			}
		case "label", "labels":
			u.Add = append(u.Add, glLabelArgs(q.arg)...)
			changes["add_label_ids"] = u.Add
			summary = append(summary, "Added "+q.arg+" label(s).")
		case "unlabel", "remove_label":
			cur, err := s.store.get(c.repo, n)
			if err != nil {
				return nil, nil, err
			}
			if q.arg == "" {
				remove = cur.labelNames()
			} else {
				remove = append(remove, glLabelArgs(q.arg)...)
			}
			changes["remove_label_ids"] = remove
			summary = append(summary, "Removed label(s).")
		case "relabel":
			ls := glLabelArgs(q.arg)
			u.Labels = &ls
			changes["label_ids"] = ls
			summary = append(summary, "Replaced all labels.")
		case "move":
			move, moveTo = true, q.arg
			changes["target_project_path"] = q.arg
			summary = append(summary, "Moved this issue to "+q.arg+".")
		case "clone":
			clone, cloneTo = true, q.arg
			if cloneTo == "" {
				cloneTo = c.repo
			}
			changes["target_clone_project_path"] = cloneTo
			summary = append(summary, "Cloned this issue to "+cloneTo+".")
		}
	}
	sn, err := s.glApply(c, n, remove, u)
	if err != nil {
		return nil, nil, err
	}
	// Issues::MoveService and Issues::CloneService: a new issue in the
	// target project with the title, description and labels; a move
	// closes the original.
	for _, to := range []struct {
		on     bool
		repo   string
		closes bool
	}{{clone, cloneTo, false}, {move, moveTo, true}} {
		if !to.on {
			continue
		}
		if _, err := s.store.create(to.repo, sn.title, sn.body, sn.labelNames(), c.by, true); err != nil {
			return nil, nil, err
		}
		if to.closes {
			closed := false
			if sn, _, err = s.store.apply(c.repo, n, nil, c.by, update{Open: &closed}); err != nil {
				return nil, nil, err
			}
		}
	}
	return changes, summary, nil
}

// glNoteWithQuickActions runs body's quick actions on issue n and returns
// what GitLab stores of body. keep false means the note held only commands:
// the answer (202) has been written and nothing is to be stored.
func (s *Sim) glNoteWithQuickActions(w http.ResponseWriter, c *glCall, n int, body string) (stored string, keep bool) {
	rest, cmds := glExtractQuickActions(body)
	if len(cmds) == 0 {
		return body, true
	}
	changes, summary, err := s.glRunQuickActions(c, n, cmds)
	if err != nil {
		s.glStoreError(w, err)
		return "", false
	}
	if rest == "" {
		writeJSON(w, http.StatusAccepted, map[string]any{"commands_changes": changes,
			"summary": []string{strings.Join(summary, " ")}})
		return "", false
	}
	return rest, true
}
