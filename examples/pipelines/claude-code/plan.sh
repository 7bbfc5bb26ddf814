#!/bin/sh
# agentsmithd plan stage: Claude Code reads the code and writes a plan,
# changing no file; the plan is the result's summary, which the reviewer
# reads and implement.sh follows (README.md in this directory).
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# Print mode in the default permission mode: reads run, an edit or a shell
# command would need a person's approval and is refused
# (https://docs.anthropic.com/en/docs/claude-code/cli-reference), and
# --disallowedTools removes the edit tools outright. Not --permission-mode
# plan: in print mode it ends in ExitPlanMode, which waits for a person.
set -- -p "$(plan_prompt)" --permission-mode default --disallowedTools "Edit Write NotebookEdit" --output-format text
if [ -n "${CLAUDE_MODEL:-}" ]; then set -- "$@" --model "$CLAUDE_MODEL"; fi
claude "$@" < /dev/null > "$AGENTSMITH_DIR/agent.out"
cat "$AGENTSMITH_DIR/agent.out"
plan_finish "$AGENTSMITH_DIR/agent.out"
