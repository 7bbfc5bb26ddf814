#!/bin/sh
# github-demo.yaml's persist_command: save a failed attempt's work.
echo "persisting $AGENTSMITH_TICKET_ID after outcome $AGENTSMITH_OUTCOME"
