package thread

import "sync"

// dispatcher delivers events to subscribers on one goroutine, in the order they were
// emitted, never while a lock of the thread layer is held. emit never blocks: the queue is
// unbounded (events are small and rare: a few per server state change).
type dispatcher struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []Event
	subs   map[uint64]func(Event)
	nextID uint64
	closed bool
	done   chan struct{}
}

func newDispatcher() *dispatcher {
	d := &dispatcher{subs: map[uint64]func(Event){}, done: make(chan struct{})}
	d.cond = sync.NewCond(&d.mu)
	go d.run()
	return d
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		for len(d.queue) == 0 && !d.closed {
			d.cond.Wait()
		}
		if len(d.queue) == 0 { // closed and drained
			d.mu.Unlock()
			return
		}
		ev := d.queue[0]
		d.queue[0] = nil
		d.queue = d.queue[1:]
		fns := make([]func(Event), 0, len(d.subs))
		for _, fn := range d.subs {
			fns = append(fns, fn)
		}
		d.mu.Unlock()
		for _, fn := range fns {
			fn(ev)
		}
	}
}

func (d *dispatcher) emit(ev Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.queue = append(d.queue, ev)
	d.cond.Signal()
}

func (d *dispatcher) subscribe(fn func(Event)) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.nextID
	d.nextID++
	d.subs[id] = fn
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.subs, id)
	}
}

// close delivers what is queued, then stops the goroutine and waits for it.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.cond.Signal()
	d.mu.Unlock()
	<-d.done
}
