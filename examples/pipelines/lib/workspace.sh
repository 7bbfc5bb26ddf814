# shellcheck shell=sh
# Shared steps of the example pipelines, sourced by each run.sh:
#
#   ticket_read        the ticket JSON from stdin into $TICKET_JSON (and ticket.json
#                      under .agentsmith/, never committed)
#   workspace_prepare  be on the work branch in the ticket's work dir
#   workspace_publish  commit what the agent changed and push the branch
#   pr_open            open a pull/merge request with gh, glab or az; sets PR_URL
#   pr_open_rest       the same with curl and GitHub's REST API (no CLI needed)
#   result_write       write {"summary", "links"} to $AGENTSMITH_RESULT_FILE
#
# and for staged projects (pipeline.stages), a plan stage and an implement
# stage after it:
#
#   plan_prompt        the task of a plan stage: read, change nothing, reply
#                      with a plan (and the reviewer's note after a rejection)
#   plan_finish        check nothing changed; the plan becomes the summary
#
# The implement stage is run.sh: its prompt carries the plan from
# $AGENTSMITH_PREVIOUS_RESULT and the reviewer's note ($AGENTSMITH_REVIEW)
# when the daemon hands them over, and its commit the plan.
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
# HANDOFF_MAX_BYTES bounds each text one stage hands the next (the plan, the
# reviewer's note) where it enters a prompt or a commit message.
: "${HANDOFF_MAX_BYTES:=8000}"
# PLAN_MAX_BYTES bounds the plan, the plan stage's summary: the daemon keeps
# at most 4000 characters of a summary.
: "${PLAN_MAX_BYTES:=3800}"

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

# ticket_text is the ticket as a prompt shows it: its id, title, link and
# body. The body is read from the JSON on stdin (jq), so any text in it
# stays data.
ticket_text() {
  body=$(printf '%s' "$TICKET_JSON" | jq -r '.body // ""')
  printf 'Ticket %s: %s\n%s\n\n%s\n' "$TICKET_ID" "$TICKET_TITLE" "$TICKET_URL" "$body"
}

# text_head prints stdin's first $1 bytes as UTF-8: a character the cut
# splits, and any byte that is not UTF-8, is dropped (iconv -c; without
# iconv the bytes pass as cut), so a bound never hands on half a character.
text_head() {
  if command -v iconv > /dev/null 2>&1; then
    head -c "$1" | { iconv -c -f UTF-8 -t UTF-8 2> /dev/null || true; }
  else
    head -c "$1"
  fi
}

# bounded prints stdin's first HANDOFF_MAX_BYTES bytes without control
# characters other than tab and newline: text from a tracker or an earlier
# stage, read as data, never run.
bounded() { text_head "$HANDOFF_MAX_BYTES" | tr -d '\000-\010\013-\037\177'; }

# previous_plan prints the summary of the previous stage's result
# ($AGENTSMITH_PREVIOUS_RESULT, JSON {summary, links}), bounded; nothing when
# it is unset or not that JSON.
previous_plan() {
  [ -n "${AGENTSMITH_PREVIOUS_RESULT:-}" ] || return 0
  printf '%s' "$AGENTSMITH_PREVIOUS_RESULT" | { jq -r '.summary // "" | strings' 2> /dev/null || true; } | bounded
}

# review_note prints the reviewer's text ($AGENTSMITH_REVIEW: the approval
# gate's /agent-smith reject <why>, given to the stage it sends the ticket
# back to), bounded; nothing without one.
review_note() { printf '%s' "${AGENTSMITH_REVIEW:-}" | bounded; }

# quoted prints a handed-over text between marker lines under its heading
# $1, so the agent sees where the text starts and ends; nothing when the
# text $2 is empty.
quoted() {
  [ -n "$2" ] || return 0
  printf '\n%s\n----- begin -----\n%s\n----- end -----\n' "$1" "$2"
}

# plan_prompt is a plan stage's task: read the code, change nothing, reply
# with the plan a person reviews before anything is implemented. After a
# rejection it carries the reviewer's note and this work dir's last plan.
plan_prompt() {
  printf 'Plan how to resolve this ticket in the repository in the current directory. Read the code but change no file. Reply with the plan only, in at most %s characters: the files to change, what changes in each, and how to test it. A person reviews the plan before it is implemented.\n\n' "$PLAN_MAX_BYTES"
  ticket_text
  review=$(review_note)
  if [ -n "$review" ] && [ -f "$AGENTSMITH_DIR/plan.md" ]; then
    quoted 'Your previous plan, which the reviewer rejected:' "$(bounded < "$AGENTSMITH_DIR/plan.md")"
  fi
  quoted "The reviewer's note (address it in the new plan):" "$review"
}

# prompt is the task an agent gets in run.sh: the ticket and, when run.sh
# is the implement stage after a plan stage, the plan the previous stage
# handed over (the one the reviewer read) and the reviewer's note.
prompt() {
  printf 'Resolve this ticket in the repository in the current directory.\n\n'
  ticket_text
  quoted 'Follow this plan (written by the plan stage, reviewed before this stage started):' "$(previous_plan)"
  quoted "The reviewer's note (address it):" "$(review_note)"
  printf '\nEdit the files; do not commit, push or open a pull request: the pipeline does that.\n'
}

# plan_finish ends a plan stage whose agent wrote its plan to the file $1:
# a plan stage changes no file (a change is reverted and fails the run, so
# a retry starts clean), and the plan, bounded to PLAN_MAX_BYTES, becomes
# the result's summary: what the reviewer reads and the next stage gets as
# $AGENTSMITH_PREVIOUS_RESULT. It is kept as .agentsmith/plan.md for the
# plan after a rejection.
plan_finish() {
  changed=$(git status --porcelain | head -n 20 | tr '\n' ' ')
  if [ -n "$changed" ]; then
    git reset -q --hard
    git clean -qfd
    die "a plan stage changes no file, and the agent changed: $changed(reverted)"
  fi
  plan=$(text_head "$PLAN_MAX_BYTES" 2> /dev/null < "$1" | tr -d '\000-\010\013-\037\177') || true
  [ -n "$(printf '%s' "$plan" | tr -d '[:space:]')" ] || die "the agent wrote no plan"
  printf '%s\n' "$plan" > "$AGENTSMITH_DIR/plan.md"
  progress "plan written ($(printf '%s' "$plan" | wc -c | tr -d ' ') bytes); nothing changed"
  result_write "$plan"
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
  # An implement stage's commit carries the plan it followed.
  plan=$(previous_plan)
  if [ -n "$plan" ]; then set -- -m "Plan:
$plan"; else set --; fi
  if ! git diff --cached --quiet; then
    git commit -q -m "$TICKET_TITLE" -m "Ticket: $TICKET_ID $TICKET_URL" "$@"
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

# pr_open_rest opens the pull request with curl, the call gh pr create makes
# (POST /repos/{owner}/{repo}/pulls,
# https://docs.github.com/rest/pulls/pulls#create-a-pull-request: head is the
# pushed branch, base the branch to merge into; 201 with the pull request,
# whose html_url is the link), so it runs where gh is not installed.
# GITHUB_API_URL points it at another API (trackersim); GITHUB_REPOSITORY
# defaults to the ticket id's repository part. Sets PR_URL.
pr_open_rest() {
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
}

# json_str prints $1 as a JSON string: backslash and quote escaped, control
# characters dropped (a title is one line), so no shell needs jq for it.
json_str() {
  printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# json_text prints $1 as a JSON string that keeps its lines (a plan, a
# summary): newlines as \n, tabs as spaces, other control characters
# dropped.
json_text() {
  printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\010\013-\037\177' | tr '\t' ' ' | sed 's/\\/\\\\/g; s/"/\\"/g' |
    awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }')"
}

# result_write hands the daemon the run's result: the Done comment (a
# stage's comment) shows the summary and the links, the pull request's when
# pr_open opened one. Without AGENTSMITH_RESULT_FILE (a daemon that does not
# read results) the PR link is still in the output printed above.
result_write() {
  [ -n "${AGENTSMITH_RESULT_FILE:-}" ] || return 0
  links='[]'
  if [ -n "${PR_URL:-}" ]; then
    links=$(printf '[{"title": %s, "url": %s}]' "$(json_str "Pull request from $BRANCH")" "$(json_str "$PR_URL")")
  fi
  printf '{"summary": %s, "links": %s}\n' "$(json_text "$1")" "$links" > "$AGENTSMITH_RESULT_FILE"
}
