#!/bin/sh
# The pipeline github-demo.yaml names: one attempt for one ticket.
echo "implementing $AGENTSMITH_TICKET_ID (attempt $AGENTSMITH_ATTEMPT)"
