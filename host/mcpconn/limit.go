package mcpconn

import (
	"context"
	"sync"
)

// startLimiter bounds how many connection attempts run at once (process start, handshake,
// first tools/list). Without it one plugin declaring hundreds of stdio servers makes the
// host fork them all at the same moment. Its limit can change while attempts wait (a
// reload of config.toml); waiters are admitted in arrival order. It is safe for concurrent
// use.
type startLimiter struct {
	mu      sync.Mutex
	limit   int
	active  int
	waiters []chan struct{} // closed when admitted
}

func newStartLimiter(limit int) *startLimiter { return &startLimiter{limit: max(limit, 1)} }

// acquire waits for a slot, bounded by ctx; on nil the caller must call release once.
func (l *startLimiter) acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.active < l.limit && len(l.waiters) == 0 {
		l.active++
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range l.waiters {
		if w == ch {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return ctx.Err()
		}
	}
	// Admitted just as ctx ended: hand the slot on.
	l.active--
	l.admitLocked()
	return ctx.Err()
}

// release gives back a slot taken by acquire.
func (l *startLimiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	l.admitLocked()
}

// setLimit changes the limit; attempts already running keep their slots.
func (l *startLimiter) setLimit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = max(n, 1)
	l.admitLocked()
}

// state returns the limit and the attempts running.
func (l *startLimiter) state() (limit, active int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit, l.active
}

func (l *startLimiter) admitLocked() {
	for l.active < l.limit && len(l.waiters) > 0 {
		close(l.waiters[0])
		l.waiters = l.waiters[1:]
		l.active++
	}
}
