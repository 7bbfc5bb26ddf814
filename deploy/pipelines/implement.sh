#!/bin/sh
# The example pipeline the image ships at
# /usr/local/share/agentsmithd/pipelines/implement.sh, where the Kubernetes
# ConfigMap points. Replace it with your own (an image built FROM this one,
# or a volume), keeping the contract: the ticket arrives as AGENTSMITH_*
# variables and as JSON on stdin; exit 0 means done, anything else failed.
set -eu
echo "agentsmithd example pipeline: $AGENTSMITH_TICKET_ID ($AGENTSMITH_TITLE), attempt $AGENTSMITH_ATTEMPT"
cat > ticket.json
echo "the ticket is in $PWD/ticket.json; replace this script with your pipeline"
