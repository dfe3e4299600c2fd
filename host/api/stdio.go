package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
)

// ServeStdio serves one connection over a byte stream in the MCP stdio framing: one
// JSON-RPC message per line, newline-terminated, UTF-8, no embedded newlines (warden's
// own output never contains one; blank lines in the input are ignored). It returns when
// r reaches EOF, on a read or write error, or when ctx is done — see ServeConn for the
// result. On return it closes r and w if they implement io.Closer (once if they are the
// same value).
//
// A Read blocked on a reader that cannot be interrupted (a blocking os.Stdin) keeps its
// goroutine until the read returns; cancel ctx and close the input to stop promptly.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.ServeConn(ctx, newStdioConn(r, w, s.maxMsg))
}

type stdioConn struct {
	r   *bufio.Reader
	w   io.Writer
	max int64

	closers   []io.Closer
	closeOnce sync.Once
}

func newStdioConn(r io.Reader, w io.Writer, max int64) *stdioConn {
	c := &stdioConn{r: bufio.NewReaderSize(r, 64<<10), w: w, max: max}
	if rc, ok := r.(io.Closer); ok {
		c.closers = append(c.closers, rc)
	}
	if wc, ok := w.(io.Closer); ok && !sameValue(w, r) {
		c.closers = append(c.closers, wc)
	}
	return c
}

// sameValue reports whether w and r are the same comparable value (e.g. one net.Conn).
func sameValue(w io.Writer, r io.Reader) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // incomparable dynamic types
		}
	}()
	return any(w) == any(r)
}

// Read returns the next line without its terminator. A line longer than max is
// skipped through its newline and reported as ErrMessageTooLarge. A last line without a
// newline is returned before io.EOF.
func (c *stdioConn) Read(context.Context) ([]byte, error) {
	var line []byte
	tooLarge := false
	for {
		chunk, err := c.r.ReadSlice('\n')
		if !tooLarge {
			if int64(len(line)+len(chunk)) > c.max+1 { // +1: the newline
				tooLarge, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLarge {
				return nil, ErrMessageTooLarge
			}
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLarge:
			return nil, ErrMessageTooLarge // the next Read reports err
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil // the next Read reports io.EOF
		default:
			return nil, err
		}
	}
}

func (c *stdioConn) Write(_ context.Context, msg []byte) error {
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	_, err := c.w.Write(b)
	return err
}

func (c *stdioConn) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		for _, cl := range c.closers {
			errs = append(errs, cl.Close())
		}
	})
	return errors.Join(errs...)
}
