package decision

import (
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/warden-mcp/warden/abi"
)

// Log writes the decision log: one JSON object per line, one line per hook invocation
// (the baseline's included). A nil *Log discards everything. Log is safe for concurrent use.
//
// Line shape:
//
//	{"time":"2026-11-30T15:04:05.123456Z","thread":"t1","plugin":"demo@1","digest":"…",
//	 "hook":"servers","input":"sha256:…","outcome":{"docs":"expose","x":"hide"},
//	 "reasons":{"x":"…"},"latency_us":3.1}
//
// A failed policy has "error" instead of "outcome". Inputs carry names and metadata only,
// never secret values, and so do these lines.
type Log struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewLog returns a decision log writing to w, one Write per line; a file is best a
// RotatingFile (OpenRotatingFile), which never splits a line across its files.
func NewLog(w io.Writer) *Log { return &Log{w: w} }

type logLine struct {
	thread, plugin, digest, hook, input string
	start, end                          time.Time
	err                                 error
}

func (l *Log) write(line *logLine, outcome func(b []byte) []byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf[:0]
	b = append(b, `{"time":`...)
	b = appendJSONString(b, line.end.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"thread":`...)
	b = appendJSONString(b, line.thread)
	b = append(b, `,"plugin":`...)
	b = appendJSONString(b, line.plugin)
	b = append(b, `,"digest":`...)
	b = appendJSONString(b, line.digest)
	b = append(b, `,"hook":`...)
	b = appendJSONString(b, line.hook)
	b = append(b, `,"input":`...)
	b = appendJSONString(b, line.input)
	if line.err != nil {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, line.err.Error())
	} else if outcome != nil {
		b = outcome(b)
	}
	b = append(b, `,"latency_us":`...)
	b = strconv.AppendFloat(b, float64(line.end.Sub(line.start).Nanoseconds())/1e3, 'f', 1, 64)
	b = append(b, "}\n"...)
	l.buf = b
	// A failing log writer must not change a decision; the error is dropped here and the
	// writer reports its own failures (a RotatingFile logs them, once until they clear).
	_, _ = l.w.Write(b)
}

// entry is one decided item in a log line: a server, a credential (by index) or a call.
type entry struct{ name, action, reason string }

// appendOutcome writes ,"outcome":{name:action,...},"reasons":{name:reason,...}.
func appendOutcome(b []byte, entries []entry) []byte {
	b = append(b, `,"outcome":{`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.name)
		b = append(b, ':')
		b = appendJSONString(b, e.action)
	}
	b = append(b, '}')
	first := true
	for _, e := range entries {
		if e.reason == "" {
			continue
		}
		if first {
			b = append(b, `,"reasons":{`...)
			first = false
		} else {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.name)
		b = append(b, ':')
		b = appendJSONString(b, e.reason)
	}
	if !first {
		b = append(b, '}')
	}
	return b
}

// logDecision writes one decision-log line for a hook invocation by plugin (or the
// baseline). ignored lists names a policy decided but does not govern.
// Callers skip building entries when e.log is nil; the check here keeps a stray call cheap.
func (e *Engine) logDecision(hook abi.Hook, thread, plugin, dgst, input string, start time.Time, entries []entry, err error, ignored []string) {
	if e.log == nil {
		return
	}
	line := &logLine{thread: thread, plugin: plugin, digest: dgst, hook: hook.String(), input: input, start: start, end: e.now(), err: err}
	e.log.write(line, func(b []byte) []byte {
		return appendIgnored(appendOutcome(b, entries), ignored)
	})
}

// appendIgnored writes ,"ignored":[names...] when there are any.
func appendIgnored(b []byte, ignored []string) []byte {
	if len(ignored) == 0 {
		return b
	}
	b = append(b, `,"ignored":[`...)
	for i, n := range ignored {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, n)
	}
	return append(b, ']')
}

// logServers writes a servers-hook line for policy p: the outcome per server, as
// logDecision does, and "lists": per server that got any, how many names each of its tool,
// prompt and resource lists holds (counts, not names: a legal answer may hold 10⁵ of them).
func (e *Engine) logServers(thread string, p Policy, input string, start time.Time, ds []abi.ServerDecision, ignored []string) {
	entries := decisionEntries(ds)
	line := &logLine{thread: thread, plugin: p.ID(), digest: hexDigest(p), hook: abi.HookServers.String(), input: input, start: start, end: e.now()}
	// A policy may answer for one server in several decisions: the counts add up per server.
	var names []string
	var counts [][6]int
	index := map[string]int{}
	for i := range ds {
		d := &ds[i]
		n := [6]int{len(d.AllowTools), len(d.DenyTools), len(d.AllowPrompts), len(d.DenyPrompts), len(d.AllowResources), len(d.DenyResources)}
		if n == ([6]int{}) {
			continue
		}
		j, ok := index[d.Name]
		if !ok {
			j = len(names)
			index[d.Name] = j
			names = append(names, d.Name)
			counts = append(counts, [6]int{})
		}
		for k := range n {
			counts[j][k] += n[k]
		}
	}
	listNames := [6]string{"allowTools", "denyTools", "allowPrompts", "denyPrompts", "allowResources", "denyResources"}
	e.log.write(line, func(b []byte) []byte {
		b = appendOutcome(b, entries)
		if len(names) > 0 {
			b = append(b, `,"lists":{`...)
			for j, name := range names {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, name)
				b = append(b, ":{"...)
				first := true
				for k, n := range counts[j] {
					if n == 0 {
						continue
					}
					if !first {
						b = append(b, ',')
					}
					first = false
					b = append(b, '"')
					b = append(b, listNames[k]...)
					b = append(b, `":`...)
					b = strconv.AppendInt(b, int64(n), 10)
				}
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		return appendIgnored(b, ignored)
	})
}

// The outcomes of putting a call to the front-door client's user (LogApproval).
const (
	ApprovalAccepted  = "accepted"  // the user approved; the call runs
	ApprovalDeclined  = "declined"  // the user refused; the call does not run
	ApprovalCancelled = "cancelled" // the user dismissed the question; the call does not run
	ApprovalRefused   = "refused"   // the question could not be asked (no elicitation); the call does not run
)

// ApprovalID names the user's answer in the decision log's plugin field.
const ApprovalID = "user"

// LogApproval writes the decision-log line of one approval: a call of tool on server in
// thread that a prompt-mode tool or an ask verdict put to the front-door client's user, and
// its outcome (ApprovalAccepted, ApprovalDeclined, ApprovalCancelled or ApprovalRefused).
// reason is logged as given, so it must hold no secret value (the question's text, the
// client's refusal). The line has the hook "approval" and no input digest.
func (e *Engine) LogApproval(threadID, server, tool, outcome, reason string) {
	if e.log == nil {
		return
	}
	now := e.now()
	line := &logLine{thread: threadID, plugin: ApprovalID, hook: "approval", start: now, end: now}
	e.log.write(line, func(b []byte) []byte {
		b = append(b, `,"server":`...)
		b = appendJSONString(b, server)
		b = append(b, `,"tool":`...)
		b = appendJSONString(b, tool)
		return appendOutcome(b, []entry{{"call", outcome, reason}})
	})
}

func serverEntries(vs []ServerVerdict) []entry {
	out := make([]entry, len(vs))
	for i, v := range vs {
		out[i] = entry{v.Name, v.Action.String(), v.Reason}
	}
	return out
}

func decisionEntries(ds []abi.ServerDecision) []entry {
	out := make([]entry, len(ds))
	for i, d := range ds {
		out[i] = entry{d.Name, d.Action.String(), d.Reason}
	}
	return out
}

func credentialEntries(vs []CredentialVerdict) []entry {
	out := make([]entry, len(vs))
	for i, v := range vs {
		out[i] = entry{strconv.Itoa(v.Index), v.Action.String(), v.Reason}
	}
	return out
}

func credentialDecisionEntries(ds []abi.CredentialDecision) []entry {
	out := make([]entry, len(ds))
	for i, d := range ds {
		out[i] = entry{strconv.FormatUint(uint64(d.Index), 10), d.Action.String(), d.Reason}
	}
	return out
}

func toolCallEntries(v *ToolCallVerdict) []entry {
	return []entry{{"call", v.Action.String(), v.Reason}}
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
