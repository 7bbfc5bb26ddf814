package membudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A reservation waits for a release, gives up when its context ends, and
// one larger than the budget fails at once; the peak never passes the limit.
func TestBudget(t *testing.T) {
	b := New(100)
	ctx := context.Background()
	if err := b.Acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 101); !errors.Is(err, ErrTooLarge) {
		t.Errorf("101 of 100: %v, want ErrTooLarge", err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := b.Acquire(short, 50); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("50 more while 60 of 100 are held: %v, want the deadline", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, 50) }()
	b.Release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.Used() != 50 || b.Peak() != 60 {
		t.Errorf("used %d peak %d, want 50 and 60", b.Used(), b.Peak())
	}
}
