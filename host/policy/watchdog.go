package policy

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Interrupting a guest
//
// wazero's own way to stop a running guest (WithCloseOnContextDone) makes
// every loop header of the compiled code leave native code for a Go check,
// ≈25 ns each; a Go guest crosses hundreds of them per call, and the
// per-call context and watcher goroutine cost ≈0.6 µs more. Instead, each
// module is instrumented at load (package interrupt): every function entry
// and loop header takes from a private budget, in proportion to the code
// it may run (as do bulk memory operations, by their length), and when the
// budget runs out (every 2^20 bytes of code run, at most) the guest tests a
// private interrupt flag, trapping if it is set, and makes a trip to Go, so
// that the Go runtime can preempt the goroutine: native code cannot be
// preempted, and a garbage collection would otherwise wait for a spinning
// guest, and with it the whole process.
//
// The watchdog sets the flag of a call that outlives its deadline or whose
// context ends. A call costs its caller two uncontended lock/unlock pairs
// and no clock reading: the watchdog stamps the deadline the first time it
// sees the call, so a call is interrupted between timeout and timeout + 2
// ticks after it started, plus the time to run out of budget (tens of
// microseconds).

// interruptExport is the export name of the interrupt flag added to every
// module at load. It has a dot so that no Go or C guest's export collides
// with it (Instrument refuses a module that has it already).
const interruptExport = "warden.interrupt"

// watchdogTick is the watchdog's period while calls run. It bounds how late
// an interrupt lands.
const watchdogTick = time.Millisecond

// watchdogIdleTicks is how many ticks with no running call the watchdog
// waits before it sleeps (the next call wakes it).
const watchdogIdleTicks = 100

// Why a call was interrupted.
const (
	notInterrupted = iota
	interruptedTimeout
	interruptedCanceled
	interruptedClosed
)

// guard is one instance's link to the watchdog: the state of its current
// call, guarded by mu (the caller and the watchdog goroutine both use it).
type guard struct {
	flag api.MutableGlobal // the instance's interrupt flag

	mu          sync.Mutex
	running     bool
	timeout     time.Duration
	deadline    time.Time       // zero until the watchdog first sees the call
	done        <-chan struct{} // the caller's ctx.Done(); nil when it has none
	interrupted int             // why the flag was set (it stays set: the instance is discarded)
}

// watchdog interrupts the guest calls of one Runtime that outlive their
// deadline. Its goroutine ticks while calls run and sleeps when idle. All
// methods are safe for concurrent use.
type watchdog struct {
	mu     sync.Mutex
	guards map[*guard]struct{}

	sleeping atomic.Bool
	wake     chan struct{} // buffered(1)
	quit     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

func newWatchdog() *watchdog {
	w := &watchdog{
		guards:  make(map[*guard]struct{}),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go w.run()
	return w
}

// stop ends the goroutine and waits for it.
func (w *watchdog) stop() {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.stopped
}

func (w *watchdog) add(g *guard) {
	w.mu.Lock()
	w.guards[g] = struct{}{}
	w.mu.Unlock()
}

func (w *watchdog) remove(g *guard) {
	w.mu.Lock()
	delete(w.guards, g)
	w.mu.Unlock()
}

// begin marks the start of a call on g that must end within timeout and
// when done (which may be nil) is closed.
func (w *watchdog) begin(g *guard, timeout time.Duration, done <-chan struct{}) {
	g.mu.Lock()
	g.running, g.timeout, g.deadline, g.done = true, timeout, time.Time{}, done
	g.mu.Unlock()
	if w.sleeping.Load() {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// end marks the end of the call on g and reports whether (and why) it was
// interrupted. An interrupted instance keeps its flag set: it must be
// discarded.
func (w *watchdog) end(g *guard) int {
	g.mu.Lock()
	why := g.interrupted
	g.running, g.done = false, nil
	g.mu.Unlock()
	return why
}

func (w *watchdog) run() {
	defer close(w.stopped)
	t := time.NewTicker(watchdogTick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			// Not the tick's own time: a watchdog scheduled late would stamp
			// deadlines in the past and interrupt calls early.
			if w.scan(time.Now()) {
				idle = 0
				continue
			}
			if idle++; idle < watchdogIdleTicks {
				continue
			}
		}
		// Idle: sleep until a call begins. The flag is set before the
		// last scan, so a call beginning meanwhile either sees it (and
		// wakes us) or is seen by the scan.
		w.sleeping.Store(true)
		if w.scan(time.Now()) {
			w.sleeping.Store(false)
			idle = 0
			continue
		}
		t.Stop()
		select {
		case <-w.quit:
			return
		case <-w.wake:
		}
		w.sleeping.Store(false)
		t.Reset(watchdogTick)
		idle = 0
		w.scan(time.Now())
	}
}

// scan checks every running call at time now and reports whether any was
// running.
func (w *watchdog) scan(now time.Time) bool {
	running := false
	w.mu.Lock()
	defer w.mu.Unlock()
	for g := range w.guards {
		g.mu.Lock()
		if g.running && g.interrupted == notInterrupted {
			running = true
			why := notInterrupted
			switch {
			case g.deadline.IsZero():
				g.deadline = now.Add(g.timeout)
			case !now.Before(g.deadline):
				why = interruptedTimeout
			}
			if g.done != nil {
				select {
				case <-g.done:
					why = interruptedCanceled
				default:
				}
			}
			g.interrupt(why)
		}
		g.mu.Unlock()
	}
	return running
}

// interruptAll interrupts every running call (the Runtime is closing).
func (w *watchdog) interruptAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for g := range w.guards {
		g.mu.Lock()
		if g.running {
			g.interrupt(interruptedClosed)
		}
		g.mu.Unlock()
	}
}

// interrupt sets g's flag for reason why, unless why is notInterrupted or
// the call was interrupted already. g.mu is held.
func (g *guard) interrupt(why int) {
	if why == notInterrupted || g.interrupted != notInterrupted {
		return
	}
	g.interrupted = why
	if g.flag != nil { // nil only for an uninstrumented module (the differential test)
		g.flag.Set(1)
	}
}
