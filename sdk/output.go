package sdk

import (
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

// The output builders write each decision into the output when it is
// recorded, so a handler may pass views of the input, constants, or pieces
// of a reason that are never joined in memory. The common decision (a short
// name and reason) is written by a straight-line fast path; anything else
// by the general encoder of package abi.
//
// The output is protobuf wire (docs/abi.md §7), with the strings copied in;
// or, in a wasm guest whose host reads them (warden_host_features), a
// gathered output (§7.1): the same bytes described as chunks, literals for
// the tags and lengths and references for the strings, which the host
// copies after the call. A copy in the guest is a call to its memmove (and
// every live value spilled around it); a reference is one store.

// Field tags of the outputs.
const (
	tagDecisions = 1<<3 | 2  // ServersOutput.decisions, CredentialsOutput.decisions
	tagError     = 15<<3 | 2 // every output's error
)

// appendError appends the error field (15) holding msg.
func appendError(b []byte, msg string) []byte {
	b = append(b, tagError)
	b = binary.AppendUvarint(b, uint64(len(msg)))
	return append(b, msg...)
}

// appendMessage appends the embedded message body as field tag.
func appendMessage(b []byte, tag byte, body []byte) []byte {
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// joined returns the concatenation of parts, using buf as scratch when
// there is more than one part (the result is valid until buf is reused).
func joined(buf *[]byte, parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	b := (*buf)[:0]
	for _, s := range parts {
		b = append(b, s...)
	}
	*buf = b
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func failMsg(msg string) string {
	if msg == "" {
		return "policy failed (no message)"
	}
	return msg
}

// out is an output buffer: buf is used up to n and always has len(buf) ==
// cap(buf), so that the fast paths store only integers (no GC write
// barrier) and check the room left with one comparison.
type out struct {
	buf    []byte
	n      int
	tmp    []byte // scratch: a field (tag, length, body) of the general path
	body   []byte // scratch: a decision encoded by the general path
	reason []byte // scratch: a reason joined from parts

	// gather: write a gathered output, whose chunks refer to strings
	// where they are; set when the host says it reads them. keep holds the
	// bytes referred to, so that the garbage collector leaves them in place
	// until the host has read them, after the call (a view of the input or
	// a constant needs it not, but telling them apart costs as much). It is
	// truncated, not cleared, at each call: what it holds from the last one
	// stays alive until overwritten (clearing it costs a call to the
	// runtime's bulk write barrier).
	gather bool
	keep   []unsafe.Pointer
}

// gatherHeader is the first word of a gathered output: the mark byte and
// three zero bytes.
const gatherHeader = abi.GatheredOutputMark

// reset starts an output. It is inlined into the hook call: a gathered
// output's header is rewritten every time (fail writes a plain output over
// it), into a buffer setGather made large enough.
func (o *out) reset() {
	o.n = 0
	if o.gather {
		binary.LittleEndian.PutUint32(o.buf, gatherHeader)
		o.n = 4
		o.keep = o.keep[:0]
	}
}

// finish returns the encoded output.
// finish returns the encoded output (empty when a gathered output has no
// chunk).
func (o *out) finish() []byte {
	if o.gather && o.n == 4 {
		return nil
	}
	return o.buf[:o.n]
}

// ref returns the chunk referring to s (docs/abi.md §7.1: its length, then
// its address); the caller keeps s's bytes alive (out.keep). Only wasm
// guests gather.
func ref(s string) uint64 { return uint64(len(s)) | addr(s)<<32 }

// data is the pointer that keeps s's bytes alive.
func data(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

// lit4 is the chunk holding the 4-byte literal v (little-endian).
func lit4(v uint32) uint64 { return abi.GatheredLiteral | 4 | uint64(v)<<32 }

// fail replaces the output with only the error err (a plain protobuf
// output, also when gathering).
func (o *out) fail(err error) ([]byte, error) {
	o.n = 0
	o.appendRaw(appendError(o.tmp[:0], err.Error()))
	return o.buf[:o.n], err
}

// setFail records a Fail: the error field is appended at once (a message
// may hold it among the decisions, and the last one counts if Fail is
// called again).
func (o *out) setFail(msg string) { o.appendBytes(appendError(o.tmp[:0], failMsg(msg))) }

// appendBytes appends the encoded bytes b to the output: as they are, or
// as a literal chunk when gathering.
func (o *out) appendBytes(b []byte) {
	if !o.gather {
		o.appendRaw(b)
		return
	}
	pad := -len(b) & 3
	if len(o.buf)-o.n < 4+len(b)+pad {
		o.grow(4 + len(b) + pad)
	}
	binary.LittleEndian.PutUint32(o.buf[o.n:], abi.GatheredLiteral|uint32(len(b)))
	k := o.n + 4 + copy(o.buf[o.n+4:], b)
	clear(o.buf[k : k+pad])
	o.n = k + pad
}

// appendRaw appends b, growing buf when needed.
func (o *out) appendRaw(b []byte) {
	if len(o.buf)-o.n < len(b) {
		o.grow(len(b))
	}
	o.n += copy(o.buf[o.n:], b)
}

// grow makes room for n more bytes.
func (o *out) grow(n int) {
	nb := make([]byte, max(2*len(o.buf), o.n+n, 512))
	copy(nb, o.buf[:o.n])
	o.buf = nb
}

// addMessage appends body as field tag (an embedded message).
func (o *out) addMessage(tag byte, body []byte) {
	o.tmp = appendMessage(o.tmp[:0], tag, body)
	o.appendBytes(o.tmp)
}

// parts returns the first three parts of a reason (r must not be empty:
// see some), "" for absent ones, and their number, without branches (the
// wasm cost model) and without copying the strings into an array (a copy of
// strings is a call to typedslicecopy, which loops). It must inline: a call
// would cost an interrupt check.
func parts(r []string) (a, b, c string, n int) {
	n = len(r)
	// min(1, n-1) and min(2, n-1) in arithmetic (the builtin min is a
	// branch on wasm), and the element when it exists, else "".
	i1 := int(uint(n-2)>>63) ^ 1
	i2 := i1 + (int(uint(n-3)>>63) ^ 1)
	return r[0], r[i1][:len(r[i1])&((1-n)>>63)], r[i2][:len(r[i2])&((2-n)>>63)], n
}

// some returns r, or a one-part empty reason when r is empty. It is inlined
// into the caller's method call, where len(r) is a constant for a literal
// argument list: the test then disappears.
func some(r []string) []string {
	if len(r) == 0 {
		return noParts[:]
	}
	return r
}

var noParts = [1]string{""}

// ServersOutput builds the output of the servers hook. Each call adds one
// decision; several decisions for the same server compose like decisions of
// different policies (the most restrictive action wins, allow lists
// intersect, deny lists add up), so a handler never needs to look back.
//
// A reason is given in parts that are concatenated: out.Disable(name,
// "host ", host, " is not allowed") writes the three pieces into the output
// without building the string (no allocation), and out.Hide(name, "no")
// is a one-part reason.
type ServersOutput struct {
	out
}

// add appends a decision with no tool lists. The fast path writes
// 0a <len> 0a <len> name 10 <action> 1a <len> reason
// with no branch when the name, the reason (at most three parts) and the
// whole decision are shorter than 128 bytes and fit in the buffer.
func (o *ServersOutput) add(name string, a abi.ServerAction, reason []string) {
	r0, r1, r2, nr := parts(reason)
	nl, rl := len(name), len(r0)+len(r1)+len(r2)
	body := 6 + nl + rl
	n := o.n
	if o.gather {
		// The same bytes as six chunks: the literal 0a <len> 0a <len>, name,
		// the literal 10 <action> 1a <len>, and each reason part (an absent
		// one: a reference of length 0).
		if (nl|rl|body)>>7|nr>>2|(len(o.buf)-n-48)>>63|int(uint32(a)>>7) != 0 {
			o.addGeneral(name, a, reason, nil, nil)
			return
		}
		b := (*[48]byte)(o.buf[n:])
		binary.LittleEndian.PutUint64(b[0:], lit4(tagDecisions|uint32(body)<<8|(1<<3|2)<<16|uint32(nl)<<24))
		binary.LittleEndian.PutUint64(b[8:], ref(name))
		binary.LittleEndian.PutUint64(b[16:], lit4(2<<3|uint32(a)<<8|(3<<3|2)<<16|uint32(rl)<<24))
		binary.LittleEndian.PutUint64(b[24:], ref(r0))
		binary.LittleEndian.PutUint64(b[32:], ref(r1))
		binary.LittleEndian.PutUint64(b[40:], ref(r2))
		o.keep = append(o.keep, data(name), data(r0), data(r1), data(r2))
		o.n = n + 48
		return
	}
	if (nl|rl|body)>>7|nr>>2|(len(o.buf)-n-2-body)>>63|int(uint32(a)>>7) != 0 {
		o.addGeneral(name, a, reason, nil, nil)
		return
	}
	b := o.buf[n : n+2+body]
	binary.LittleEndian.PutUint32(b, tagDecisions|uint32(body)<<8|(1<<3|2)<<16|uint32(nl)<<24)
	k := 4 + copy(b[4:], name)
	binary.LittleEndian.PutUint32(b[k:], 2<<3|uint32(a)<<8|(3<<3|2)<<16|uint32(rl)<<24)
	k += 4
	// An empty part is skipped: a copy is a call to memmove, which costs
	// more in a wasm guest than the branch.
	if len(r0) != 0 {
		k += copy(b[k:], r0)
	}
	if len(r1) != 0 {
		k += copy(b[k:], r1)
	}
	if len(r2) != 0 {
		copy(b[k:], r2)
	}
	o.n = n + 2 + body
}

// addGeneral appends any decision through abi's encoder.
func (o *ServersOutput) addGeneral(name string, a abi.ServerAction, reason, allow, deny []string) {
	d := abi.ServerDecision{Name: name, Action: a, Reason: joined(&o.reason, reason), AllowTools: allow, DenyTools: deny}
	o.body = d.AppendTo(o.body[:0])
	o.addMessage(tagDecisions, o.body)
}

// Expose records an explicit "expose" for server name (the default; useful
// to put a reason in the decision log).
func (o *ServersOutput) Expose(name string, reason ...string) {
	o.add(name, abi.ServerExpose, some(reason))
}

// Disable lists server name without tools, with the reason as its
// toolsError.
func (o *ServersOutput) Disable(name string, reason ...string) {
	o.add(name, abi.ServerDisable, some(reason))
}

// Hide removes server name from the thread.
func (o *ServersOutput) Hide(name string, reason ...string) {
	o.add(name, abi.ServerHide, some(reason))
}

// AllowTools restricts server name to the listed tools (an allow list; it
// can only narrow what other decisions allow).
func (o *ServersOutput) AllowTools(name string, tools ...string) {
	o.addGeneral(name, abi.ServerExpose, nil, tools, nil)
}

// DenyTools removes the listed tools from server name.
func (o *ServersOutput) DenyTools(name string, tools ...string) {
	o.addGeneral(name, abi.ServerExpose, nil, nil, tools)
}

// AllowPrompts restricts server name to the listed prompts (ABI version 2;
// an allow list, like AllowTools).
func (o *ServersOutput) AllowPrompts(name string, prompts ...string) {
	o.addDecision(&abi.ServerDecision{Name: name, AllowPrompts: prompts})
}

// DenyPrompts removes the listed prompts from server name (ABI version 2).
func (o *ServersOutput) DenyPrompts(name string, prompts ...string) {
	o.addDecision(&abi.ServerDecision{Name: name, DenyPrompts: prompts})
}

// AllowResources restricts server name to the listed resources (ABI
// version 2): each entry is a resource URI or a resource template's URI
// template, and an entry ending in "*" matches every URI (or template)
// that starts with the rest of it. The host does the matching.
func (o *ServersOutput) AllowResources(name string, resources ...string) {
	o.addDecision(&abi.ServerDecision{Name: name, AllowResources: resources})
}

// DenyResources removes the listed resources from server name (ABI version
// 2; entries as for AllowResources).
func (o *ServersOutput) DenyResources(name string, resources ...string) {
	o.addDecision(&abi.ServerDecision{Name: name, DenyResources: resources})
}

// Add records decision d as it is: an action, a reason and item lists in
// one decision.
func (o *ServersOutput) Add(d abi.ServerDecision) { o.addDecision(&d) }

// addDecision appends decision d through abi's encoder.
func (o *ServersOutput) addDecision(d *abi.ServerDecision) {
	o.body = d.AppendTo(o.body[:0])
	o.addMessage(tagDecisions, o.body)
}

// Fail reports that the policy could not decide; the host fails closed
// (disables every server the policy governs) with msg in the reason.
func (o *ServersOutput) Fail(msg string) { o.setFail(msg) }

// CredentialsOutput builds the output of the credentials hook: decisions by
// index into in.Server().Credentials(). Several decisions for one index
// compose (the most restrictive wins). Reasons are given in parts, as for
// ServersOutput.
type CredentialsOutput struct {
	out
}

// add appends 0a <len> 08 <index> 10 <action> 1a <len> reason; indexes of
// 128 and more, and long reasons, take the general path.
func (o *CredentialsOutput) add(index int, a abi.CredentialAction, reason []string) {
	if uint64(index) > 1<<32-1 { // also a negative index
		o.Fail("sdk: credential index " + strconv.Itoa(index) + " out of range")
		return
	}
	r0, r1, r2, nr := parts(reason)
	rl := len(r0) + len(r1) + len(r2)
	body := 6 + rl
	n := o.n
	if (index|rl|body)>>7|nr>>2|(len(o.buf)-n-2-body)>>63 != 0 {
		d := abi.CredentialDecision{Index: uint32(index), Action: a, Reason: joined(&o.reason, reason)}
		o.body = d.AppendTo(o.body[:0])
		o.addMessage(tagDecisions, o.body)
		return
	}
	head := tagDecisions | uint64(body)<<8 | 1<<3<<16 | uint64(index)<<24 | 2<<3<<32 | uint64(a)<<40 | (3<<3|2)<<48 | uint64(rl)<<56
	if o.gather { // a literal chunk of the 8 bytes, then the parts (see ServersOutput.add)
		if (len(o.buf)-n-36)>>63 != 0 {
			o.grow(36)
		}
		b := (*[36]byte)(o.buf[n:])
		binary.LittleEndian.PutUint32(b[0:], abi.GatheredLiteral|8)
		binary.LittleEndian.PutUint64(b[4:], head)
		binary.LittleEndian.PutUint64(b[12:], ref(r0))
		binary.LittleEndian.PutUint64(b[20:], ref(r1))
		binary.LittleEndian.PutUint64(b[28:], ref(r2))
		o.keep = append(o.keep, data(r0), data(r1), data(r2))
		o.n = n + 36
		return
	}
	b := o.buf[n : n+2+body]
	binary.LittleEndian.PutUint64(b, head)
	k := 8
	k += copy(b[k:], r0)
	k += copy(b[k:], r1)
	copy(b[k:], r2)
	o.n = n + 2 + body
}

// Local resolves credential index on the host (allowed only for a server
// that runs locally or a host-config declaration the operator routed; the
// baseline enforces that whatever the policy says).
func (o *CredentialsOutput) Local(index int, reason ...string) {
	o.add(index, abi.CredentialLocal, some(reason))
}

// Executor resolves credential index by name inside the executor.
func (o *CredentialsOutput) Executor(index int, reason ...string) {
	o.add(index, abi.CredentialExecutor, some(reason))
}

// Deny refuses credential index.
func (o *CredentialsOutput) Deny(index int, reason ...string) {
	o.add(index, abi.CredentialDeny, some(reason))
}

// Fail reports that the policy could not decide; the host fails closed.
func (o *CredentialsOutput) Fail(msg string) { o.setFail(msg) }

// call is the output of the call hooks (tool_call, resource_read,
// prompt_get): an action with a reason, and optionally rewritten arguments.
// Their fields have the same numbers in the three outputs (docs/abi.md §8).
type call struct {
	action  abi.ToolCallAction
	reason  []byte
	rewrite bool
	args    []byte
	err     string
	b       []byte
}

func (o *call) reset() {
	o.action, o.rewrite, o.err = abi.ToolCallAllow, false, ""
	o.reason, o.args = o.reason[:0], o.args[:0]
}

func (o *call) finish() []byte {
	b := o.b[:0]
	if o.action != abi.ToolCallAllow {
		b = append(b, 1<<3, byte(o.action))
		if len(o.reason) > 0 {
			b = appendMessage(b, 2<<3|2, o.reason)
		}
	}
	if o.rewrite {
		b = append(b, 3<<3, 1)
		if len(o.args) > 0 {
			b = appendMessage(b, 4<<3|2, o.args)
		}
	}
	if o.err != "" {
		b = appendError(b, o.err)
	}
	o.b = b
	return b
}

func (o *call) fail(err error) ([]byte, error) {
	o.b = appendError(o.b[:0], err.Error())
	return o.b, err
}

// decide records action a with reason when a is more restrictive than the
// action so far (DENY > ASK > ALLOW): the first reason of the winning
// action is kept.
func (o *call) decide(a abi.ToolCallAction, reason []string) {
	if !a.MoreRestrictive(o.action) {
		return
	}
	o.action = a
	o.reason = o.reason[:0]
	for _, s := range reason {
		o.reason = append(o.reason, s...)
	}
}

func (o *call) setRewrite(argsJSON []byte) {
	o.rewrite = true
	o.args = append(o.args[:0], argsJSON...)
}

// ToolCallOutput builds the output of the tool_call hook. It starts as
// "allow, arguments unchanged".
type ToolCallOutput struct{ call }

// Allow records an explicit allow. It does not undo an earlier Deny or Ask
// in the same call: the most restrictive decision wins.
func (o *ToolCallOutput) Allow() {}

// Deny refuses the call; the reason (the concatenation of its parts) is
// returned to the caller. The first Deny's reason is kept.
func (o *ToolCallOutput) Deny(reason ...string) { o.decide(abi.ToolCallDeny, reason) }

// Ask asks the front-door client's user before the call runs; the reason
// (the concatenation of its parts) is the text shown. A Deny in the same
// call wins over it; the first Ask's reason is kept.
func (o *ToolCallOutput) Ask(reason ...string) { o.decide(abi.ToolCallAsk, reason) }

// Denied reports whether Deny was called.
func (o *ToolCallOutput) Denied() bool { return o.action == abi.ToolCallDeny }

// Asked reports whether Ask was called (and Deny was not).
func (o *ToolCallOutput) Asked() bool { return o.action == abi.ToolCallAsk }

// Rewrite replaces the call's arguments with argsJSON, which must be a JSON
// object (the host fails closed otherwise). argsJSON is copied into a reused
// buffer, so the caller may reuse it.
func (o *ToolCallOutput) Rewrite(argsJSON []byte) { o.setRewrite(argsJSON) }

// Fail reports that the policy could not decide; the host fails closed
// (denies the call) with msg in the reason.
func (o *ToolCallOutput) Fail(msg string) { o.err = failMsg(msg) }

// ResourceReadOutput builds the output of the resource_read hook (ABI
// version 2). It starts as "allow".
type ResourceReadOutput struct{ call }

// Allow records an explicit allow; it does not undo an earlier Deny.
func (o *ResourceReadOutput) Allow() {}

// Deny refuses the read; the reason (the concatenation of its parts) is
// returned to the client. The first Deny's reason is kept.
func (o *ResourceReadOutput) Deny(reason ...string) { o.decide(abi.ToolCallDeny, reason) }

// Denied reports whether Deny was called.
func (o *ResourceReadOutput) Denied() bool { return o.action == abi.ToolCallDeny }

// Fail reports that the policy could not decide; the host fails closed
// (denies the read) with msg in the reason.
func (o *ResourceReadOutput) Fail(msg string) { o.err = failMsg(msg) }

// PromptGetOutput builds the output of the prompt_get hook (ABI version
// 2). It starts as "allow, arguments unchanged".
type PromptGetOutput struct{ call }

// Allow records an explicit allow; it does not undo an earlier Deny.
func (o *PromptGetOutput) Allow() {}

// Deny refuses the request; the reason (the concatenation of its parts) is
// returned to the client. The first Deny's reason is kept.
func (o *PromptGetOutput) Deny(reason ...string) { o.decide(abi.ToolCallDeny, reason) }

// Denied reports whether Deny was called.
func (o *PromptGetOutput) Denied() bool { return o.action == abi.ToolCallDeny }

// Rewrite replaces the prompt's arguments with argsJSON, which must be a
// JSON object (the host fails closed otherwise). argsJSON is copied.
func (o *PromptGetOutput) Rewrite(argsJSON []byte) { o.setRewrite(argsJSON) }

// Fail reports that the policy could not decide; the host fails closed
// (denies the request) with msg in the reason.
func (o *PromptGetOutput) Fail(msg string) { o.err = failMsg(msg) }

// ToolResultOutput builds the output of the tool_result hook (ABI version
// 2). It starts as "pass": the client gets the upstream result unchanged.
type ToolResultOutput struct {
	action abi.ToolResultAction
	reason []byte
	result []byte
	err    string
	b      []byte
}

func (o *ToolResultOutput) reset() {
	o.action, o.err = abi.ToolResultPass, ""
	o.reason, o.result = o.reason[:0], o.result[:0]
}

func (o *ToolResultOutput) finish() []byte {
	b := o.b[:0]
	if o.action != abi.ToolResultPass {
		b = append(b, 1<<3, byte(o.action))
		if len(o.reason) > 0 {
			b = appendMessage(b, 2<<3|2, o.reason)
		}
		if o.action == abi.ToolResultRewrite && len(o.result) > 0 {
			b = appendMessage(b, 3<<3|2, o.result)
		}
	}
	if o.err != "" {
		b = appendError(b, o.err)
	}
	o.b = b
	return b
}

func (o *ToolResultOutput) fail(err error) ([]byte, error) {
	o.b = appendError(o.b[:0], err.Error())
	return o.b, err
}

// Pass records an explicit pass; it does not undo an earlier Rewrite or
// Error.
func (o *ToolResultOutput) Pass() {}

// Rewrite replaces the result the client gets with resultJSON, which must
// be a CallToolResult JSON object (the host fails closed otherwise); the
// reason, optional, goes into the decision log. resultJSON is copied, so
// the caller may reuse it. A later Rewrite replaces an earlier one; after
// Error it has no effect.
func (o *ToolResultOutput) Rewrite(resultJSON []byte, reason ...string) {
	if o.action == abi.ToolResultError {
		return
	}
	o.action = abi.ToolResultRewrite
	o.result = append(o.result[:0], resultJSON...)
	o.reason = o.reason[:0]
	for _, s := range reason {
		o.reason = append(o.reason, s...)
	}
}

// Error replaces the result with a tool error whose text is the reason
// (the concatenation of its parts). It wins over Rewrite; the first
// Error's reason is kept.
func (o *ToolResultOutput) Error(reason ...string) {
	if o.action == abi.ToolResultError {
		return
	}
	o.action = abi.ToolResultError
	o.result = o.result[:0]
	o.reason = o.reason[:0]
	for _, s := range reason {
		o.reason = append(o.reason, s...)
	}
}

// Action returns the action recorded so far.
func (o *ToolResultOutput) Action() abi.ToolResultAction { return o.action }

// Fail reports that the policy could not decide; the host fails closed
// (the client gets a tool error, never the upstream result) with msg in
// the reason.
func (o *ToolResultOutput) Fail(msg string) { o.err = failMsg(msg) }
