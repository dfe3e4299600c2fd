package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// MaxLineBytes caps one JSON-RPC line a process writes to its stdout.
const MaxLineBytes = protocol.MaxMessageBytes

// maxStderrLine cuts a process's stderr lines for the log.
const maxStderrLine = 4096

// CommandTransport returns an mcp.Transport that runs p in the executor (process/start)
// and speaks newline-delimited JSON-RPC over its stdin and stdout, as mcp.CommandTransport
// does for a local process. A ProcessID left empty is chosen by the client. The process's
// stderr goes to the Client's Logger, line by line.
//
// The connection survives a disconnect when the executor resumes the session (the output
// it buffered meanwhile is read first); when it does not, or the process exits, Read
// fails. Writes while disconnected fail with ErrDisconnected. Close closes the process's
// stdin, terminates it and waits (bounded) for its exit. Stdout that is not read while
// the process keeps writing fails the connection with ErrStreamOverflow once
// Config.StreamBuffer bytes are unread, and the process is terminated.
func (c *Client) CommandTransport(p protocol.ProcessStartParams) mcp.Transport {
	p.Argv = append([]string(nil), p.Argv...)
	p.EnvVars = append([]string(nil), p.EnvVars...)
	return &commandTransport{c: c, p: p}
}

type commandTransport struct {
	c *Client
	p protocol.ProcessStartParams
}

// procStream is the host's side of one executor process: its stdout stream, its stderr
// log and its exit.
type procStream struct {
	c      *Client
	id     string
	stdout *stream
	stderr *lineLogger

	exitOnce sync.Once
	exitedCh chan struct{}
	exit     protocol.ProcessExited
}

func (c *Client) proc(id string) *procStream {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return c.procs[id]
}

func (c *Client) removeProc(id string) {
	c.procMu.Lock()
	_, ok := c.procs[id]
	delete(c.procs, id)
	c.procMu.Unlock()
	if ok {
		c.releaseStream()
	}
}

// failProcs ends every process stream with err (a fresh session, or Close).
func (c *Client) failProcs(err error) {
	c.procMu.Lock()
	procs := c.procs
	c.procs = map[string]*procStream{}
	c.procMu.Unlock()
	for _, ps := range procs {
		ps.stdout.fail(err)
		ps.markExited(protocol.ProcessExited{ProcessID: ps.id, ExitCode: -1})
		c.releaseStream()
	}
}

func (ps *procStream) output(cn *conn, stream string, data []byte) {
	switch stream {
	case protocol.StreamStdout:
		if !ps.stdout.push(data) {
			ps.c.cleanup(cn, protocol.MethodProcessTerminate, protocol.ProcessRef{ProcessID: ps.id})
		}
	case protocol.StreamStderr:
		_, _ = ps.stderr.Write(data)
	}
}

func (ps *procStream) exited(e protocol.ProcessExited) {
	ps.c.log.Debug("executor process exited", "process", ps.id, "exitCode", e.ExitCode, "signal", e.Signal, "outputDropped", e.OutputDropped)
	ps.stdout.fail(io.EOF)
	ps.markExited(e)
}

func (ps *procStream) markExited(e protocol.ProcessExited) {
	ps.exitOnce.Do(func() {
		ps.exit = e
		close(ps.exitedCh)
	})
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, p := t.c, t.p
	method := protocol.MethodProcessStart
	if len(p.Argv) == 0 {
		return nil, fmt.Errorf("executor %q: %s: %w: empty argv", c.cfg.Name, method, ErrConfig)
	}
	if !c.Capabilities().Processes {
		return nil, fmt.Errorf("executor %q: %s %s: %w: the executor does not offer processes", c.cfg.Name, method, p.Argv[0], ErrForbidden)
	}
	if p.ProcessID == "" {
		p.ProcessID = "p" + strconv.FormatUint(c.nextProc.Add(1), 10)
	}
	if err := c.reserveStream(method); err != nil {
		return nil, err
	}
	ps := &procStream{
		c:        c,
		id:       p.ProcessID,
		stdout:   newStream(fmt.Sprintf("executor %q: stdout of %s", c.cfg.Name, p.Argv[0]), c.cfg.StreamBuffer),
		stderr:   &lineLogger{log: c.log.Named("process"), max: maxStderrLine, args: []any{"process", p.ProcessID, "command", p.Argv[0]}},
		exitedCh: make(chan struct{}),
	}
	c.procMu.Lock()
	if _, dup := c.procs[p.ProcessID]; dup {
		c.procMu.Unlock()
		c.releaseStream()
		return nil, fmt.Errorf("executor %q: %s: %w: processId %q is in use", c.cfg.Name, method, ErrConfig, p.ProcessID)
	}
	c.procs[p.ProcessID] = ps
	c.procMu.Unlock()
	var res protocol.ProcessStartResult
	if err := c.call(ctx, method, p, &res); err != nil {
		c.removeProc(p.ProcessID)
		return nil, fmt.Errorf("%w (argv[0] %q)", err, p.Argv[0])
	}
	c.log.Debug("executor process started", "process", p.ProcessID, "command", p.Argv[0], "pid", res.PID)
	return &procConn{ps: ps, closed: make(chan struct{}), argv0: p.Argv[0]}, nil
}

// procConn is an mcp.Connection over one executor process. Read is called by one
// goroutine at a time (the go-sdk's reader); Write and Close may be called concurrently.
type procConn struct {
	ps    *procStream
	argv0 string

	buf    []byte // stdout read but not yet returned as a line
	chunk  [64 << 10]byte
	closed chan struct{}
	once   sync.Once
}

func (pc *procConn) SessionID() string { return "" }

func (pc *procConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if i := bytes.IndexByte(pc.buf, '\n'); i >= 0 {
			line := bytes.TrimSpace(pc.buf[:i])
			pc.buf = pc.buf[i+1:]
			if len(line) == 0 {
				continue
			}
			msg, err := jsonrpc.DecodeMessage(line)
			if err != nil {
				return nil, fmt.Errorf("executor %q: stdout of %s: %w", pc.ps.c.cfg.Name, pc.argv0, err)
			}
			return msg, nil
		}
		if len(pc.buf) > MaxLineBytes {
			return nil, fmt.Errorf("executor %q: stdout of %s: %w: a line over %d bytes", pc.ps.c.cfg.Name, pc.argv0, ErrTooLarge, MaxLineBytes)
		}
		n, err := pc.ps.stdout.read(ctx, pc.chunk[:])
		if n > 0 {
			if len(pc.buf) == 0 {
				pc.buf = pc.buf[:0:0] // drop the consumed prefix's backing array
			}
			pc.buf = append(pc.buf, pc.chunk[:n]...)
			continue
		}
		if err != nil {
			select {
			case <-pc.closed:
				return nil, mcp.ErrConnectionClosed
			default:
			}
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(pc.buf)) > 0 {
				msg, derr := jsonrpc.DecodeMessage(bytes.TrimSpace(pc.buf))
				pc.buf = nil
				if derr == nil {
					return msg, nil
				}
			}
			return nil, err
		}
	}
}

func (pc *procConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-pc.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("executor %q: encoding a message for %s: %w", pc.ps.c.cfg.Name, pc.argv0, err)
	}
	b = append(b, '\n')
	return pc.ps.c.call(ctx, protocol.MethodProcessWrite, protocol.ProcessWriteParams{ProcessID: pc.ps.id, Data: b}, nil)
}

// Close closes the process's stdin, terminates it and waits (bounded) for process/exited.
func (pc *procConn) Close() error {
	pc.once.Do(func() {
		close(pc.closed)
		pc.ps.stdout.fail(mcp.ErrConnectionClosed) // unblocks Read
		c := pc.ps.c
		ref := protocol.ProcessRef{ProcessID: pc.ps.id}
		ctx, cancel := context.WithTimeout(c.ctx, cleanupTimeout)
		defer cancel()
		select {
		case <-pc.ps.exitedCh:
		default:
			if err := c.call(ctx, protocol.MethodProcessCloseStdin, ref, nil); err != nil {
				c.log.Debug("executor process/closeStdin failed", "process", pc.ps.id, "error", err)
			}
			if err := c.call(ctx, protocol.MethodProcessTerminate, ref, nil); err != nil {
				c.log.Debug("executor process/terminate failed", "process", pc.ps.id, "error", err)
				break
			}
			select {
			case <-pc.ps.exitedCh:
			case <-ctx.Done():
			}
		}
		c.removeProc(pc.ps.id)
	})
	return nil
}
