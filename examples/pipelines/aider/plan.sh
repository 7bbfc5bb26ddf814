#!/bin/sh
# agentsmithd plan stage: aider reads the code and writes a plan, changing
# no file; the plan is the result's summary, which the reviewer reads and
# implement.sh follows (README.md in this directory).
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# --chat-mode ask: aider answers about the code and never edits it
# (https://aider.chat/docs/usage/modes.html). --no-gitignore keeps it from
# adding .aider* to .gitignore; its history files are excluded here, so
# the plan stage's check that nothing changed sees only the repository.
grep -qxF '/.aider*' .git/info/exclude || echo '/.aider*' >> .git/info/exclude
set -- --message "$(plan_prompt)" --chat-mode ask --yes-always --no-auto-commits --no-gitignore --no-pretty
if [ -n "${AIDER_MODEL:-}" ]; then set -- "$@" --model "$AIDER_MODEL"; fi
# shellcheck disable=SC2086 # AIDER_FILES is a list of paths
aider "$@" ${AIDER_FILES:-} < /dev/null > "$AGENTSMITH_DIR/agent.out"
cat "$AGENTSMITH_DIR/agent.out"
plan_finish "$AGENTSMITH_DIR/agent.out"
