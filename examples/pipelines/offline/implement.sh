#!/bin/sh
# agentsmithd implement stage, the stage after plan.sh: run.sh, whose prompt
# carries the plan from $AGENTSMITH_PREVIOUS_RESULT and the reviewer's note
# ($AGENTSMITH_REVIEW) and whose commit the plan (../lib/workspace.sh).
exec "$(dirname "$0")/run.sh"
