#!/bin/sh
# agentsmithd pipeline that needs no account and no AI: the offline demo runs
# it against trackersim. It does what the agent pipelines do around their
# agent (README.md in this directory): be on the work branch, change a file,
# commit, push, open a pull request, write the result file. The "agent" is
# one line appended to CHANGELOG.md. It opens the pull request with curl
# against GitHub's REST API (the call gh pr create makes), so it runs where
# gh is not installed; GITHUB_API_URL points it at trackersim.
. "$(dirname "$0")/../lib/workspace.sh"
ticket_read
workspace_prepare

echo "- $TICKET_TITLE ($TICKET_ID)" >> CHANGELOG.md
echo "changed CHANGELOG.md on $BRANCH"
workspace_publish

# POST /repos/{owner}/{repo}/pulls
# (https://docs.github.com/rest/pulls/pulls#create-a-pull-request): head is
# the pushed branch, base the branch to merge into; 201 with the pull
# request, whose html_url is the link.
api=${GITHUB_API_URL:-https://api.github.com/}
repo=${GITHUB_REPOSITORY:-${TICKET_ID%#*}}
body=$(printf '{"title": %s, "head": %s, "base": %s, "body": %s}' \
  "$(json_str "$TICKET_TITLE")" "$(json_str "$BRANCH")" "$(json_str "$BASE_BRANCH")" "$(json_str "Resolves $TICKET_ID")")
auth="Authorization: Bearer ${GITHUB_TOKEN:?GITHUB_TOKEN not set}"
if ! answer=$(curl -fsS -X POST "${api%/}/repos/$repo/pulls" -H "$auth" \
  -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28" --data "$body"); then
  # A retry of a run that opened it already: GitHub answers 422 "A pull
  # request already exists"; list pull requests by head finds it
  # (https://docs.github.com/rest/pulls/pulls#list-pull-requests).
  answer=$(curl -fsS "${api%/}/repos/$repo/pulls?head=${repo%%/*}:$BRANCH" -H "$auth" -H "Accept: application/vnd.github+json")
fi
PR_URL=$(printf '%s' "$answer" | grep -Eo '"html_url": *"[^"]*/pull/[0-9]+"' | head -n 1 | sed 's/.*"\(http[^"]*\)"$/\1/')
[ -n "$PR_URL" ] || die "no pull request in the answer: $answer"
echo "pull request: $PR_URL"
result_write "Changed CHANGELOG.md on $BRANCH and opened a pull request."
