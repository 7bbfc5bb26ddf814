#!/bin/sh
# agentsmithd pipeline: aider works on the ticket, then the branch is pushed
# and a pull/merge request opened (README.md in this directory).
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# aider --message: do this one instruction, apply the edits, exit
# (https://aider.chat/docs/scripting.html); --yes-always answers its
# confirmations; --no-auto-commits leaves the commit to workspace_publish,
# so it carries the ticket's title and id. AIDER_FILES (space-separated)
# adds files to the chat; without it aider picks from its repository map.
set -- --message "$(prompt)" --yes-always --no-auto-commits --no-pretty
if [ -n "${AIDER_MODEL:-}" ]; then set -- "$@" --model "$AIDER_MODEL"; fi
# shellcheck disable=SC2086 # AIDER_FILES is a list of paths
aider "$@" ${AIDER_FILES:-} < /dev/null > "$AGENTSMITH_DIR/agent.out" # not | tee: sh has no pipefail
cat "$AGENTSMITH_DIR/agent.out"

workspace_publish
pr_open
result_write "aider changed $(git diff --name-only "origin/$BASE_BRANCH..HEAD" | wc -l | tr -d ' ') file(s) for $TICKET_ID"
