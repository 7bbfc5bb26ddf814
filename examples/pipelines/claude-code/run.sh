#!/bin/sh
# agentsmithd pipeline: Claude Code works on the ticket, then the branch is
# pushed and a pull/merge request opened (README.md in this directory).
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# claude -p: print mode, one prompt, no REPL, exits when done
# (https://docs.anthropic.com/en/docs/claude-code/cli-reference).
# --permission-mode acceptEdits lets it edit files without asking; tools
# beyond edits (a test command) need CLAUDE_ALLOWED_TOOLS, e.g.
# "Bash(go test:*)", passed as --allowedTools.
set -- -p "$(prompt)" --permission-mode acceptEdits --output-format text
if [ -n "${CLAUDE_ALLOWED_TOOLS:-}" ]; then set -- "$@" --allowedTools "$CLAUDE_ALLOWED_TOOLS"; fi
if [ -n "${CLAUDE_MODEL:-}" ]; then set -- "$@" --model "$CLAUDE_MODEL"; fi
claude "$@" < /dev/null > "$AGENTSMITH_DIR/agent.out" # not | tee: sh has no pipefail
cat "$AGENTSMITH_DIR/agent.out"

workspace_publish
pr_open
result_write "$(text_head 600 < "$AGENTSMITH_DIR/agent.out")"
