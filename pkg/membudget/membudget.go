// Package membudget is a semaphore of bytes: memory a process holds on
// behalf of callers it has not authenticated yet (webhook bodies read
// before their signature can be checked) is reserved here first, so many
// connections at once cannot make it hold more than the budget, however
// many there are.
package membudget

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrTooLarge is returned for a reservation larger than the whole budget.
var ErrTooLarge = errors.New("larger than the whole memory budget")

// Budget is a number of bytes reserved and released by concurrent callers.
// The zero Budget is unusable: use New.
type Budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	peak  int64
	freed chan struct{} // closed, and replaced, by every Release
}

// New returns a budget of limit bytes.
func New(limit int64) *Budget {
	return &Budget{limit: limit, freed: make(chan struct{})}
}

// Limit is the budget's size.
func (b *Budget) Limit() int64 { return b.limit }

// Acquire reserves n bytes, waiting until they are free or ctx ends (then
// it returns ctx's error and reserves nothing).
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if n > b.limit {
		return fmt.Errorf("reserve %d bytes: %w (%d)", n, ErrTooLarge, b.limit)
	}
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("reserve %d bytes: %w", n, ctx.Err())
		}
	}
}

// Release returns n bytes Acquire reserved.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used < 0 {
		panic("membudget: released more than was reserved")
	}
	close(b.freed)
	b.freed = make(chan struct{})
}

// Used is the number of bytes reserved now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak is the most bytes ever reserved at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
