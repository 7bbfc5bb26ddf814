package consumer

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
)

// The finisher does not renew its lock: a write timeout longer than half
// the lock TTL is cut to it, so a write ends before another finisher may
// adopt the record.
func TestOutcomeFinisherWriteTimeoutWithinItsLock(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	claims := claim.NewService(rdb, nil, nil, claim.Config{Instance: "hk"})
	f := NewOutcomeFinisher(rdb, claims, OutcomeFinisherConfig{LockTTL: 4 * time.Second, WriteTimeout: 30 * time.Second})
	if f.cfg.WriteTimeout != 2*time.Second {
		t.Errorf("write timeout %v with a 4s lock, want 2s", f.cfg.WriteTimeout)
	}
	f = NewOutcomeFinisher(rdb, claims, OutcomeFinisherConfig{LockTTL: time.Minute, WriteTimeout: 10 * time.Second})
	if f.cfg.WriteTimeout != 10*time.Second {
		t.Errorf("write timeout %v with a 1m lock, want 10s kept", f.cfg.WriteTimeout)
	}
}
