package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/mcpconn"
)

// session is what survives a disconnect: the processes started by its connections.
type session struct {
	id string
	s  *Server

	mu      sync.Mutex
	owner   *conn // the attached connection; nil while detached
	procs   map[string]*process
	timer   *time.Timer
	retired bool
}

func (ss *session) process(id string) *process {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.procs[id]
}

// claim attaches c to a live session (resume); a previous connection still attached is
// ended. It reports false for a retired session.
func (ss *session) claim(c *conn) bool {
	ss.mu.Lock()
	if ss.retired {
		ss.mu.Unlock()
		return false
	}
	if ss.timer != nil {
		ss.timer.Stop()
		ss.timer = nil
	}
	old := ss.owner
	ss.owner = c
	ss.mu.Unlock()
	if old != nil && old != c {
		old.fail(errors.New("executor: the session was resumed on another connection"))
	}
	return true
}

// detach marks the session detached from c and starts the resume window.
func (ss *session) detach(c *conn) {
	ss.mu.Lock()
	if ss.owner != c || ss.retired {
		ss.mu.Unlock()
		return
	}
	ss.owner = nil
	ss.timer = time.AfterFunc(ss.s.opts.ResumeWindow, ss.expire)
	ss.s.log.Debug("session detached; processes kept for the resume window", "session", ss.id, "window", ss.s.opts.ResumeWindow)
	procs := ss.procList()
	ss.mu.Unlock()
	for _, p := range procs {
		p.mu.Lock()
		if p.sink == c {
			p.sink = nil
		}
		p.mu.Unlock()
	}
}

func (ss *session) expire() {
	ss.mu.Lock()
	attached := ss.owner != nil
	ss.mu.Unlock()
	if !attached {
		ss.s.log.Debug("session resume window expired", "session", ss.id)
		ss.retire()
	}
}

// retire ends the session: it can no longer be resumed and its processes are killed.
func (ss *session) retire() {
	ss.mu.Lock()
	if ss.retired {
		ss.mu.Unlock()
		return
	}
	ss.retired = true
	if ss.timer != nil {
		ss.timer.Stop()
	}
	procs := ss.procList()
	ss.mu.Unlock()
	ss.s.mu.Lock()
	if ss.s.sessions[ss.id] == ss {
		delete(ss.s.sessions, ss.id)
	}
	ss.s.mu.Unlock()
	for _, p := range procs {
		p.signal(syscall.SIGKILL)
	}
}

// procList returns the processes in id order; ss.mu is held.
func (ss *session) procList() []*process {
	out := make([]*process, 0, len(ss.procs))
	for _, p := range ss.procs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// replay sends c every process's buffered output, then attaches c to the live streams.
func (ss *session) replay(c *conn) {
	ss.mu.Lock()
	procs := ss.procList()
	ss.mu.Unlock()
	for _, p := range procs {
		p.attach(c)
	}
}

func (ss *session) remove(p *process) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.procs[p.id] == p {
		delete(ss.procs, p.id)
	}
}

// process is one child process of a session.
type process struct {
	id  string
	ss  *session
	cmd *exec.Cmd
	pid int

	stdinMu     sync.Mutex
	stdin       *os.File
	stdinClosed bool

	turnMu sync.Mutex
	last   chan struct{} // closed when the latest stdin turn is done

	outs   [2]*os.File // stdout, stderr read ends
	pumps  sync.WaitGroup
	exited chan struct{} // closed once Wait returned

	termMu    sync.Mutex
	killTimer *time.Timer

	mu       sync.Mutex // guards what follows; held while delivering, to keep order
	sink     *conn      // nil while detached: output is buffered
	buf      []buffered
	bufBytes int
	dropped  int64
	// bufLogged: the first buffered chunk of this detachment was logged.
	bufLogged bool
}

type buffered struct {
	msg    []byte
	n      int
	exited bool
}

// stdinTurn orders the stdin operations of one process in the order they were read.
type stdinTurn struct {
	prev <-chan struct{}
	mine chan struct{}
}

func (p *process) takeTurn() *stdinTurn {
	p.turnMu.Lock()
	defer p.turnMu.Unlock()
	t := &stdinTurn{prev: p.last, mine: make(chan struct{})}
	p.last = t.mine
	return t
}

func (t *stdinTurn) wait() {
	if t.prev != nil {
		<-t.prev
	}
}

func (t *stdinTurn) done() { close(t.mine) }

// deliver sends msg to the attached host or buffers it (n bytes of output, bounded by
// Options.OutputBuffer; the exit notification is always kept).
func (p *process) deliver(msg []byte, n int, exited bool) {
	if p.sink != nil && p.sink.write(msg) == nil {
		if exited {
			p.ss.remove(p)
		}
		return
	}
	if !p.bufLogged {
		p.bufLogged = true
		p.ss.s.log.Debug("buffering process output while the host is detached", "session", p.ss.id, "process", p.id)
	}
	if !exited && p.bufBytes+n > p.ss.s.opts.OutputBuffer {
		p.dropped += int64(n)
		return
	}
	p.buf = append(p.buf, buffered{msg: msg, n: n, exited: exited})
	p.bufBytes += n
}

func (p *process) attach(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) > 0 {
		b := p.buf[0]
		if c.write(b.msg) != nil {
			return
		}
		p.buf = p.buf[1:]
		p.bufBytes -= b.n
		if b.exited {
			p.ss.remove(p)
			return
		}
	}
	p.buf = nil
	p.bufLogged = false
	p.sink = c
}

func (p *process) pump(stream string, f *os.File) {
	defer p.pumps.Done()
	buf := make([]byte, httpChunk)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			msg, merr := encodeNotification(protocol.NotifyProcessOutput, protocol.ProcessOutput{ProcessID: p.id, Stream: stream, Data: buf[:n]})
			if merr == nil {
				p.mu.Lock()
				p.deliver(msg, n, false)
				p.mu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

// wait reaps the process, waits for its output to drain (bounded: a grandchild holding
// the pipes open must not keep process/exited from being sent), then reports the exit.
func (p *process) wait() {
	err := p.cmd.Wait()
	close(p.exited)
	p.termMu.Lock()
	if p.killTimer != nil {
		p.killTimer.Stop()
	}
	p.termMu.Unlock()
	drained := make(chan struct{})
	go func() { p.pumps.Wait(); close(drained) }()
	t := time.NewTimer(TerminateGrace)
	select {
	case <-drained:
	case <-t.C:
		for _, f := range p.outs {
			_ = f.Close() // ends the pumps' reads
		}
		<-drained
	}
	t.Stop()
	for _, f := range p.outs {
		_ = f.Close()
	}
	p.stdinMu.Lock()
	p.stdinClosed = true
	_ = p.stdin.Close()
	p.stdinMu.Unlock()

	ex := protocol.ProcessExited{ProcessID: p.id, ExitCode: -1}
	if st := p.cmd.ProcessState; st != nil {
		ex.ExitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ex.Signal = signalName(ws.Signal())
		}
	} else if err != nil {
		p.ss.s.log.Debug("process wait failed", "process", p.id, "error", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ex.OutputDropped = p.dropped
	msg, merr := encodeNotification(protocol.NotifyProcessExited, ex)
	if merr != nil {
		return
	}
	p.deliver(msg, 0, true)
}

// signal sends sig to the process's group (it was started as a group leader), unless it
// has been reaped (its pid may since name another process).
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, sig)
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGILL: "SIGILL", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS",
		syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// childEnv is the minimal environment of a child: the executor's base variables when
// set, then the literal env, then envVars read from the executor's environment (unset
// names skipped); a later entry wins.
func childEnv(getenv func(string) (string, bool), env map[string]string, envVars []string) []string {
	m := map[string]string{}
	for _, k := range mcpconn.BaseEnvVars() {
		if v, ok := getenv(k); ok {
			m[k] = v
		}
	}
	for k, v := range env {
		m[k] = v
	}
	for _, k := range envVars {
		if v, ok := getenv(k); ok {
			m[k] = v
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// lookPath finds name on the executor's PATH (a name with a slash is used as is).
func lookPath(getenv func(string) (string, bool), name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, _ := getenv("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue // an empty element would mean the working directory
		}
		cand := filepath.Join(dir, name)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("executable %q not found on the executor's PATH", name)
}

func validEnvName(k string) bool {
	return k != "" && !strings.ContainsAny(k, "=\x00")
}

func (ss *session) start(raw json.RawMessage, c *conn) (any, func(), *protocol.Error) {
	var p protocol.ProcessStartParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, nil, e
	}
	switch {
	case p.ProcessID == "":
		return nil, nil, invalidParams("params.processId: missing")
	case len(p.Argv) == 0 || p.Argv[0] == "":
		return nil, nil, invalidParams("params.argv: missing (argv[0] is the program)")
	}
	for k, v := range p.Env {
		if !validEnvName(k) || strings.ContainsRune(v, 0) {
			return nil, nil, invalidParams("params.env: invalid variable %q", k)
		}
	}
	for _, k := range p.EnvVars {
		if !validEnvName(k) {
			return nil, nil, invalidParams("params.envVars: invalid variable name %q", k)
		}
	}
	for _, a := range p.Argv {
		if strings.ContainsRune(a, 0) {
			return nil, nil, invalidParams("params.argv: an argument contains a NUL byte")
		}
	}
	s := ss.s
	path, err := lookPath(s.getenv, p.Argv[0])
	if err != nil {
		return nil, nil, failed("process/start %s: %v", p.ProcessID, err)
	}

	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.retired:
		return nil, nil, failed("process/start %s: the session is retired", p.ProcessID)
	case ss.procs[p.ProcessID] != nil:
		return nil, nil, invalidParams("params.processId: %q is already in use", p.ProcessID)
	case len(ss.procs) >= s.opts.MaxProcesses:
		return nil, nil, failed("process/start %s: the session already has %d processes", p.ProcessID, s.opts.MaxProcesses)
	}
	pr, err := startProcess(path, p, childEnv(s.getenv, p.Env, p.EnvVars))
	if err != nil {
		return nil, nil, failed("process/start %s (%s): %v", p.ProcessID, p.Argv[0], err)
	}
	pr.ss = ss
	pr.sink = ss.owner
	ss.procs[pr.id] = pr
	s.procWG.Add(3)
	pr.pumps.Add(2)
	go func() { defer s.procWG.Done(); pr.wait() }()
	s.log.Debug("process started", "session", ss.id, "process", pr.id, "pid", pr.pid, "program", p.Argv[0])
	after := func() {
		go func() { defer s.procWG.Done(); pr.pump(protocol.StreamStdout, pr.outs[0]) }()
		go func() { defer s.procWG.Done(); pr.pump(protocol.StreamStderr, pr.outs[1]) }()
	}
	return protocol.ProcessStartResult{PID: pr.pid}, after, nil
}

// startProcess starts argv in its own process group with pipes for its three streams.
func startProcess(path string, p protocol.ProcessStartParams, env []string) (*process, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        p.Argv,
		Env:         env,
		Dir:         p.Cwd,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child holds its ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	return &process{
		id:     p.ProcessID,
		cmd:    cmd,
		pid:    cmd.Process.Pid,
		stdin:  inW,
		outs:   [2]*os.File{outR, errR},
		exited: make(chan struct{}),
	}, nil
}

var errStdinClosed = errors.New("stdin is closed")

func (p *process) writeStdin(ctx context.Context, data []byte, timeout time.Duration) error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinClosed {
		return errStdinClosed
	}
	// A child that stops reading must not hold the request (and its in-flight slot)
	// forever: the write has the same deadline as a write to the host.
	if err := p.stdin.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = p.stdin.SetWriteDeadline(time.Now()) })
	defer stop()
	_, err := p.stdin.Write(data)
	return err
}

func (ss *session) write(ctx context.Context, raw json.RawMessage) (any, func(), *protocol.Error) {
	var params protocol.ProcessWriteParams
	if e := decodeParams(raw, &params); e != nil {
		return nil, nil, e
	}
	p := ss.process(params.ProcessID)
	if p == nil {
		return nil, nil, notFound("process/write: no process %q", params.ProcessID)
	}
	select {
	case <-p.exited:
		// Exited (its process/exited may be on its way): gone, like an unknown id, even
		// before the session forgets it.
		return nil, nil, notFound("process/write: process %q has exited", params.ProcessID)
	default:
	}
	if err := p.writeStdin(ctx, params.Data, ss.s.opts.WriteTimeout); err != nil {
		return nil, nil, failed("process/write %s: %v", params.ProcessID, err)
	}
	return struct{}{}, nil, nil
}

func (ss *session) closeStdin(_ context.Context, raw json.RawMessage) (any, func(), *protocol.Error) {
	var params protocol.ProcessRef
	if e := decodeParams(raw, &params); e != nil {
		return nil, nil, e
	}
	p := ss.process(params.ProcessID)
	if p == nil {
		return nil, nil, notFound("process/closeStdin: no process %q", params.ProcessID)
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if !p.stdinClosed {
		p.stdinClosed = true
		if err := p.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			return nil, nil, failed("process/closeStdin %s: %v", params.ProcessID, err)
		}
	}
	return struct{}{}, nil, nil
}

func (ss *session) terminate(_ context.Context, raw json.RawMessage) (any, func(), *protocol.Error) {
	var params protocol.ProcessRef
	if e := decodeParams(raw, &params); e != nil {
		return nil, nil, e
	}
	p := ss.process(params.ProcessID)
	if p == nil {
		return nil, nil, notFound("process/terminate: no process %q", params.ProcessID)
	}
	p.termMu.Lock()
	if p.killTimer == nil {
		p.signal(syscall.SIGTERM)
		p.killTimer = time.AfterFunc(TerminateGrace, func() { p.signal(syscall.SIGKILL) })
	}
	p.termMu.Unlock()
	return struct{}{}, nil, nil
}
