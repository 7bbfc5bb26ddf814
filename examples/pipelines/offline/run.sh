#!/bin/sh
# agentsmithd pipeline without an agent, the one `agentsmithd demo` runs:
# it does what the agent pipelines do around their agent: check out the
# work branch, change a file, commit, push, open a pull request, write the
# result file. The "agent" is one line appended to CHANGELOG.md. It opens
# the pull request with curl against GitHub's REST API (pr_open_rest), so
# it runs where gh is not installed; GITHUB_API_URL points it at trackersim.
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

# As the implement stage (implement.sh) it follows the plan plan.sh wrote
# and handed over; workspace_publish puts the plan in the commit message
# (read with jq).
summary="Changed CHANGELOG.md on $BRANCH and opened a pull request."
if [ -n "${AGENTSMITH_PREVIOUS_RESULT:-}" ]; then
  echo "following the plan from the previous stage"
  summary="Carried out the plan: $summary"
fi
echo "- $TICKET_TITLE ($TICKET_ID)" >> CHANGELOG.md
echo "changed CHANGELOG.md on $BRANCH"
workspace_publish
pr_open_rest
result_write "$summary"
