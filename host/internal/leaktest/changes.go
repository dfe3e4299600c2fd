package leaktest

import (
	"context"
	"fmt"
	"sync"
)

// changes lets goroutines wait for state guarded by a mutex to change: the owner calls
// notifyLocked (mutex held) after every change, and wait re-evaluates a condition after
// each one. The zero value is ready to use.
type changes struct {
	ch chan struct{} // closed and replaced on every change
}

// notifyLocked wakes every waiter; the owner's mutex is held.
func (c *changes) notifyLocked() {
	if c.ch != nil {
		close(c.ch)
	}
	c.ch = make(chan struct{})
}

// wait blocks until cond reports true or ctx ends; cond runs without mu held (it may take
// it). what names the waiter in the error.
func (c *changes) wait(ctx context.Context, mu *sync.Mutex, cond func() bool, what string) error {
	for {
		mu.Lock()
		if c.ch == nil {
			c.ch = make(chan struct{})
		}
		ch := c.ch
		mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("leaktest: %s wait: %w", what, ctx.Err())
		}
	}
}
