#!/bin/sh
# The pipeline minimal.yaml names (./run.sh, beside the config): validate
# checks that it exists and is executable.
echo "ticket $AGENTSMITH_TICKET_ID"
