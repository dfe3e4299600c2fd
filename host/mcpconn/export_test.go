package mcpconn

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when a test fires one of its timers: backoff
// windows and idle grace periods then end exactly when the test says.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers chan *fakeTimer // every timer created, in order
}

type fakeTimer struct {
	clk *fakeClock
	d   time.Duration
	c   chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), timers: make(chan *fakeTimer, 64)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := &fakeTimer{clk: f, d: d, c: make(chan time.Time, 1)}
	f.timers <- t
	return t.c, func() bool { return true }
}

// next returns the next timer the code under test creates.
func (f *fakeClock) next(t *testing.T) *fakeTimer {
	t.Helper()
	select {
	case tm := <-f.timers:
		return tm
	case <-time.After(30 * time.Second):
		t.Fatal("no timer was started")
		return nil
	}
}

// fire moves the clock to the timer's deadline and delivers it.
func (t *fakeTimer) fire() {
	t.clk.mu.Lock()
	t.clk.now = t.clk.now.Add(t.d)
	now := t.clk.now
	t.clk.mu.Unlock()
	t.c <- now
}

// withClock sets the Manager's clock (Options.clock is unexported).
func withClock(o Options, c clock) Options {
	o.clock = c
	return o
}
