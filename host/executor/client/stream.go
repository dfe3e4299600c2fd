package client

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// stream is the unread part of a byte stream the executor sends as notifications (a
// response body, a process's stdout). The connection's read loop pushes into it and never
// waits for the consumer: when the unread bytes would pass limit the stream fails with
// ErrStreamOverflow (drop-and-fail) and the producer is told to stop. That keeps one slow
// consumer from stalling every other call and stream of the connection.
type stream struct {
	limit int
	name  string // for errors

	mu     sync.Mutex
	chunks [][]byte
	size   int
	err    error         // terminal: io.EOF after the last byte, or why the stream failed
	ready  chan struct{} // signalled (cap 1) on every push and on fail
}

func newStream(name string, limit int) *stream {
	return &stream{name: name, limit: limit, ready: make(chan struct{}, 1)}
}

func (s *stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// push appends data; it reports false when the stream is (now) failed.
func (s *stream) push(data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	if s.size+len(data) > s.limit {
		s.chunks, s.size = nil, 0
		s.err = fmt.Errorf("%s: %w (more than %d bytes unread)", s.name, ErrStreamOverflow, s.limit)
		s.signal()
		return false
	}
	if len(data) > 0 {
		s.chunks = append(s.chunks, data)
		s.size += len(data)
		s.signal()
	}
	return true
}

// fail ends the stream: with io.EOF the unread bytes are still read first; with any
// other error they are dropped. Only the first end counts.
func (s *stream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = err
	if err != io.EOF {
		s.chunks, s.size = nil, 0
	}
	s.signal()
}

// read copies unread bytes into p, waiting for some (or ctx, or the end).
func (s *stream) read(ctx context.Context, p []byte) (int, error) {
	for {
		s.mu.Lock()
		if len(s.chunks) > 0 {
			n := copy(p, s.chunks[0])
			if n == len(s.chunks[0]) {
				s.chunks[0] = nil
				s.chunks = s.chunks[1:]
			} else {
				s.chunks[0] = s.chunks[0][n:]
			}
			s.size -= n
			if len(s.chunks) > 0 || s.err != nil {
				s.signal() // let the next read proceed without waiting
			}
			s.mu.Unlock()
			return n, nil
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return 0, err
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
