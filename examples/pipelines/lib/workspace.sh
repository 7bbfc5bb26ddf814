# shellcheck shell=sh
# Shared steps of the example pipelines, sourced by each run.sh:
#
#   ticket_read        the ticket JSON from stdin into $TICKET_JSON (and ticket.json
#                      under .agentsmith/, never committed)
#   workspace_prepare  be on the work branch in the ticket's work dir
#   workspace_publish  commit what the agent changed and push the branch
#   pr_open            open a pull/merge request with gh, glab or az; sets PR_URL
#   result_write       write {"summary", "links"} to $AGENTSMITH_RESULT_FILE
#
# The daemon's contract: the ticket arrives as AGENTSMITH_* variables and as
# JSON on stdin, the process runs in the ticket's work dir, exit 0 is Done.
# With the built-in work branch (workspace: {git: ...}) the daemon has already
# cloned the repository there on branch agent-smith/{ticket}; without it,
# GIT_REMOTE (set in the project's pipeline.env) names the repository and
# workspace_prepare makes the checkout itself.

set -eu

# BASE_BRANCH is what the pull request targets.
: "${BASE_BRANCH:=main}"
# PR_CLI picks the platform's CLI: gh (GitHub), glab (GitLab), az (Azure Repos).
: "${PR_CLI:=gh}"

# Excluded from every commit: the daemon's attempt logs and result file when
# they live in the work dir, and the ticket copy below.
AGENTSMITH_DIR=.agentsmith

die() { echo "pipeline: $*" >&2; exit 1; }

# progress appends a line to $AGENTSMITH_PROGRESS_FILE, which a project with
# progress: comment shows in one comment edited in place; without it, no-op.
progress() { [ -z "${AGENTSMITH_PROGRESS_FILE:-}" ] || printf '%s\n' "$*" >> "$AGENTSMITH_PROGRESS_FILE"; }

# slug turns a ticket id (owner/repo#12, PROJ-7) into a branch-safe segment.
slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-' | sed 's/--*/-/g; s/^-//; s/-$//'; }

ticket_read() {
  mkdir -p "$AGENTSMITH_DIR"
  TICKET_JSON=$(cat)
  printf '%s\n' "$TICKET_JSON" > "$AGENTSMITH_DIR/ticket.json"
  TICKET_ID=${AGENTSMITH_TICKET_ID:?AGENTSMITH_TICKET_ID not set: run me from agentsmithd}
  TICKET_TITLE=${AGENTSMITH_TITLE:-}
  TICKET_URL=${AGENTSMITH_URL:-}
}

# prompt is the task an agent gets: the ticket's title, body and link. The
# body is read from the JSON on stdin (jq), so any text in it stays data.
prompt() {
  body=$(printf '%s' "$TICKET_JSON" | jq -r '.body // ""')
  printf 'Resolve this ticket in the repository in the current directory.\n\nTicket %s: %s\n%s\n\n%s\n\nEdit the files; do not commit, push or open a pull request: the pipeline does that.\n' \
    "$TICKET_ID" "$TICKET_TITLE" "$TICKET_URL" "$body"
}

workspace_prepare() {
  if [ -d .git ]; then
    current=$(git rev-parse --abbrev-ref HEAD)
    case "$current" in
      agent-smith/*) BRANCH=$current ;; # the daemon's work branch
      *) BRANCH=${AGENTSMITH_BRANCH:-agent-smith/$(slug "$TICKET_ID")}; git checkout -q -B "$BRANCH" ;;
    esac
  else
    [ -n "${GIT_REMOTE:-}" ] || die "the work dir is not a git checkout and GIT_REMOTE is not set"
    BRANCH=${AGENTSMITH_BRANCH:-agent-smith/$(slug "$TICKET_ID")}
    # init + fetch rather than clone: the work dir already holds .agentsmith/.
    git init -q
    git remote add origin "$GIT_REMOTE"
    git fetch -q origin
    if git rev-parse -q --verify "refs/remotes/origin/$BRANCH" > /dev/null; then
      git checkout -q -B "$BRANCH" "origin/$BRANCH" # a retry resumes the branch
    else
      git checkout -q -B "$BRANCH" "origin/$BASE_BRANCH"
    fi
  fi
  grep -qx "/$AGENTSMITH_DIR/" .git/info/exclude 2> /dev/null || echo "/$AGENTSMITH_DIR/" >> .git/info/exclude
  git config user.name > /dev/null || git config user.name "${GIT_AUTHOR_NAME:-agentsmithd}"
  git config user.email > /dev/null || git config user.email "${GIT_AUTHOR_EMAIL:-agentsmithd@localhost}"
  progress "workspace ready on $BRANCH; the agent is working"
}

# workspace_publish commits every change (an agent that committed itself,
# like aider, leaves nothing to add) and pushes the branch. Nothing new on
# the branch fails the run: a pull request without a change is not a result.
workspace_publish() {
  git add -A # .agentsmith/ is in .git/info/exclude (workspace_prepare)
  if ! git diff --cached --quiet; then
    git commit -q -m "$TICKET_TITLE" -m "Ticket: $TICKET_ID $TICKET_URL"
  fi
  [ "$(git rev-list --count "origin/$BASE_BRANCH..HEAD" 2> /dev/null || git rev-list --count HEAD)" -gt 0 ] ||
    die "the agent changed nothing"
  git push -q -u origin "HEAD:refs/heads/$BRANCH"
  progress "pushed $BRANCH; opening the pull request"
}

# pr_open opens the pull/merge request with the platform's CLI and sets
# PR_URL from what the CLI printed.
pr_open() {
  pr_title="$TICKET_TITLE"
  pr_body=$(printf 'Resolves %s\n\n%s\n\nOpened by agentsmithd (attempt %s).' "$TICKET_ID" "$TICKET_URL" "${AGENTSMITH_ATTEMPT:-1}")
  case "$PR_CLI" in
    gh)
      # https://cli.github.com/manual/gh_pr_create: --head skips gh's own
      # push/fork prompt; the URL of the new pull request is printed.
      out=$(gh pr create --head "$BRANCH" --base "$BASE_BRANCH" --title "$pr_title" --body "$pr_body") ;;
    glab)
      # glab mr create (man glab-mr-create): -s source, -b target, -t, -d,
      # --yes skips the confirmation prompt; the MR's URL is printed last.
      out=$(glab mr create --source-branch "$BRANCH" --target-branch "$BASE_BRANCH" --title "$pr_title" --description "$pr_body" --yes) ;;
    az)
      # https://learn.microsoft.com/cli/azure/repos/pr#az-repos-pr-create:
      # the answer is the pull request as JSON; --query builds its web URL.
      out=$(az repos pr create --source-branch "$BRANCH" --target-branch "$BASE_BRANCH" --title "$pr_title" --description "$pr_body" \
        --query "join('', [repository.webUrl, '/pullrequest/', to_string(pullRequestId)])" --output tsv) ;;
    *) die "PR_CLI=$PR_CLI: want gh, glab or az" ;;
  esac
  # The CLI's own status is checked above (an assignment keeps it under
  # set -e; a pipe would hide it); the URL is the last one it printed.
  PR_URL=$(printf '%s\n' "$out" | grep -Eo 'https?://[^[:space:]]+' | tail -n 1) || true
  [ -n "$PR_URL" ] || die "$PR_CLI printed no pull request URL"
  echo "pull request: $PR_URL"
}

# json_str prints $1 as a JSON string: backslash and quote escaped, control
# characters dropped (a title is one line), so no shell needs jq for it.
json_str() {
  printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# result_write hands the daemon the run's result: the Done comment shows the
# summary and the links. Without AGENTSMITH_RESULT_FILE (a daemon that does
# not read results) the PR link is still in the output printed above.
result_write() {
  [ -n "${AGENTSMITH_RESULT_FILE:-}" ] || return 0
  printf '{"summary": %s, "links": [{"title": %s, "url": %s}]}\n' \
    "$(json_str "$1")" "$(json_str "Pull request from $BRANCH")" "$(json_str "$PR_URL")" > "$AGENTSMITH_RESULT_FILE"
}
