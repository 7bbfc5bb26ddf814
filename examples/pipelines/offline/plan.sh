#!/bin/sh
# agentsmithd plan stage without an agent: checks out the work branch,
# changes nothing and writes the plan implement.sh carries out as the
# result's summary. After a rejection the reviewer's note
# ($AGENTSMITH_REVIEW) is quoted in the new plan.
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

{
  printf 'Plan for %s: %s\n\n' "$TICKET_ID" "$TICKET_TITLE"
  printf '1. Append the line "- %s (%s)" to CHANGELOG.md.\n' "$TICKET_TITLE" "$TICKET_ID"
  printf '2. Commit it on %s with this plan in the message and push the branch.\n' "$BRANCH"
  printf '3. Open a pull request from %s into %s.\n' "$BRANCH" "$BASE_BRANCH"
  quoted "Reviewer's note, addressed by this plan:" "$(review_note)"
} > "$AGENTSMITH_DIR/agent.out"
cat "$AGENTSMITH_DIR/agent.out"
plan_finish "$AGENTSMITH_DIR/agent.out"
