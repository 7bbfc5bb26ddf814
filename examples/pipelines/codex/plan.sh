#!/bin/sh
# agentsmithd plan stage: OpenAI Codex CLI reads the code and writes a plan,
# changing no file; the plan is the result's summary, which the reviewer
# reads and implement.sh follows (README.md in this directory).
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# codex exec in its read-only sandbox: it reads the work dir and edits
# nothing (https://developers.openai.com/codex/noninteractive);
# --output-last-message writes its final message, the plan, to a file.
set -- exec --sandbox read-only --output-last-message "$AGENTSMITH_DIR/agent.out"
if [ -n "${CODEX_MODEL:-}" ]; then set -- "$@" --model "$CODEX_MODEL"; fi
codex "$@" "$(plan_prompt)" < /dev/null
plan_finish "$AGENTSMITH_DIR/agent.out"
