#!/bin/sh
# agentsmithd pipeline: OpenAI Codex CLI works on the ticket, then the branch
# is pushed and a pull/merge request opened (README.md in this directory).
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# codex exec: non-interactive mode; --sandbox workspace-write lets it edit
# the work dir; --output-last-message writes its final message to a file
# (https://developers.openai.com/codex/noninteractive). stdin is /dev/null:
# codex exec appends piped stdin to the prompt.
set -- exec --sandbox workspace-write --output-last-message "$AGENTSMITH_DIR/agent.out"
if [ -n "${CODEX_MODEL:-}" ]; then set -- "$@" --model "$CODEX_MODEL"; fi
codex "$@" "$(prompt)" < /dev/null

workspace_publish
pr_open
result_write "$(text_head 600 2> /dev/null < "$AGENTSMITH_DIR/agent.out" || echo "codex resolved $TICKET_ID")"
