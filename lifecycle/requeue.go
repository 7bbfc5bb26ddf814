package lifecycle

import (
	"context"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

// SourceOperator marks what an operator did by hand (agentsmithctl).
const SourceOperator = "operator"

// QueuedTickets returns the ticket keys with a request on any queue level,
// in the delayed set (a retry waiting out its backoff, or a request given
// back at a concurrency limit) or in any consumer's processing list.
func QueuedTickets(ctx context.Context, q *queue.Queue) (map[string]bool, error) {
	reqs, err := QueuedRequests(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(reqs))
	for _, req := range reqs {
		out[req.Ref.Key()] = true
	}
	return out, nil
}

// QueuedRequests returns every request on any queue level, in the delayed
// set and in any consumer's processing list, in that order; entries that
// are not PipelineRequests are skipped. q must have the fleet's layout
// (every level and the delayed set), or what it lacks goes unseen.
func QueuedRequests(ctx context.Context, q *queue.Queue) ([]PipelineRequest, error) {
	entries, err := q.Entries(ctx)
	if err != nil {
		return nil, err
	}
	delayed, err := q.DelayedEntries(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range delayed {
		entries = append(entries, d.Payload)
	}
	lists, err := q.ProcessingKeys(ctx, keys.ProcessingPattern())
	if err != nil {
		return nil, err
	}
	for _, l := range lists {
		more, err := q.ProcessingEntries(ctx, l)
		if err != nil {
			return nil, err
		}
		entries = append(entries, more...)
	}
	out := make([]PipelineRequest, 0, len(entries))
	for _, e := range entries {
		if req, err := DecodeRequest(e); err == nil {
			out = append(out, req)
		}
	}
	return out, nil
}
