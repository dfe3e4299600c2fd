package abi

import (
	"encoding/binary"
	"slices"
)

// The "warden flat" layout of hook inputs (docs/abi.md §6). Inputs are
// written by the host and read in place by guests: a header, then records
// of 8-byte slots, then string bytes. Every integer is a little-endian u32.
//
//	header   magic "WDNF", layout version, message kind, root offset,
//	         number of record types N, then N record strides
//	record   a fixed-size array of 8-byte slots:
//	         string   (offset, length) of its bytes
//	         list     (offset, count) of an array of records, or of string slots
//	         message  (offset, count) with count 0 (the zero message) or 1
//	         flags    (u32, u32) of bits and enums
//
// Offsets are from the start of the input. A list of records is indexed
// with the stride of the record type from the header, so that a newer host
// can append slots to a record type and an older guest still finds element
// i; a slot beyond a record's stride reads as zero.

// FlatMagic is the first u32 of a flat input: the bytes "WDNF".
const FlatMagic = 0x464E4457

// FlatVersion is the layout version of flat inputs that this package reads
// and writes. Compatible changes (new slots appended to a record type, new
// record types appended to the stride table) do not change it.
const FlatVersion = 1

// Record types: the index of each type's stride in the header's stride
// table. New types are only ever appended.
const (
	typeServersInput = iota
	typeCredentialsInput
	typeToolCallInput
	typeThread
	typeRoot
	typeEnvironment
	typeServer
	typeCredential
	typeRequirement
	numTypes
)

// Header layout.
const (
	hdrMagic   = 0
	hdrVersion = 4
	hdrKind    = 8
	hdrRoot    = 12
	hdrTypes   = 16
	hdrStrides = 20
	hdrSize    = hdrStrides + 4*numTypes // 56: the root record follows
)

// Slot byte offsets of each record type, and its size (its stride as
// written by this version). docs/abi.md §6 is the normative table.
const (
	// ServersInput
	siThread          = 0  // message Thread
	siEnvironments    = 8  // list of Environment
	siServers         = 16 // list of Server
	siFlags           = 24 // flags: bit 0 has_requirements
	siRequirements    = 32 // list of Requirement
	sizeServersInput  = 40
	siFlagHasRequires = 1

	// CredentialsInput
	ciThread             = 0  // message Thread
	ciServer             = 8  // message Server
	ciRoute              = 16 // string
	ciEnvironment        = 24 // message Environment
	sizeCredentialsInput = 32

	// ToolCallInput
	tcThread          = 0  // message Thread
	tcServer          = 8  // string
	tcPluginID        = 16 // string
	tcTool            = 24 // string
	tcArguments       = 32 // string (bytes: a JSON object)
	tcCaller          = 40 // string
	sizeToolCallInput = 48

	// Thread
	thID       = 0  // string
	thKind     = 8  // string
	thRoots    = 16 // list of Root
	sizeThread = 24

	// Root
	rtID            = 0  // string
	rtLocation      = 8  // string
	rtEnvironmentID = 16 // string
	rtPath          = 24 // string
	sizeRoot        = 32

	// Environment
	envID                = 0 // string
	envFlags             = 8 // flags: bits below
	sizeEnvironment      = 16
	envFlagLocal         = 1
	envFlagConnected     = 2
	envFlagHeaderEnvVars = 4
	envFlagProcesses     = 8

	// Server
	svName          = 0  // string
	svOrigin        = 8  // string
	svPluginID      = 16 // string
	svTransport     = 24 // string
	svURL           = 32 // string
	svCommand       = 40 // string
	svArgs          = 48 // list of string
	svEnvironment   = 56 // string
	svCredentials   = 64 // list of Credential
	svFlags         = 72 // flags: u32 bits below, u32 TransportKind
	svEnabledTools  = 80 // list of string
	svDisabledTools = 88 // list of string
	svURLHost       = 96 // string: URLHost(url), a substring of the URL's bytes
	sizeServer      = 104
	svFlagEnabled   = 1
	svFlagRequired  = 2

	// Credential
	crKind         = 0  // string
	crName         = 8  // string
	crEnvVar       = 16 // string
	crOwner        = 24 // string
	crResolvesAt   = 32 // string
	sizeCredential = 40

	// Requirement
	rqName          = 0  // string
	rqURL           = 8  // string
	rqCommand       = 16 // string
	sizeRequirement = 24
)

// knownSize is the record size of each type in this version: the stride the
// writer uses, and the smallest stride the views read without copying.
var knownSize = [numTypes]uint32{
	typeServersInput:     sizeServersInput,
	typeCredentialsInput: sizeCredentialsInput,
	typeToolCallInput:    sizeToolCallInput,
	typeThread:           sizeThread,
	typeRoot:             sizeRoot,
	typeEnvironment:      sizeEnvironment,
	typeServer:           sizeServer,
	typeCredential:       sizeCredential,
	typeRequirement:      sizeRequirement,
}

// typeName names the record types in errors.
var typeName = [numTypes]string{"ServersInput", "CredentialsInput", "ToolCallInput", "Thread", "Root", "Environment", "Server", "Credential", "Requirement"}

// TransportKind is the transport of a server as an enum, in the flags slot
// of a flat Server record, so that a policy can test it without comparing
// strings. The Transport string is sent as well.
type TransportKind uint32

// The transport kinds. Values a reader does not know (from a newer host)
// must be treated like TransportOther.
const (
	TransportOther TransportKind = 0 // neither "stdio" nor "http" (or empty)
	TransportStdio TransportKind = 1 // "stdio"
	TransportHTTP  TransportKind = 2 // "http"
)

// TransportKindOf returns the kind of a transport string.
func TransportKindOf(transport string) TransportKind {
	switch transport {
	case "stdio":
		return TransportStdio
	case "http":
		return TransportHTTP
	}
	return TransportOther
}

// String returns "stdio", "http", "other" or "TransportKind(N)".
func (k TransportKind) String() string {
	switch k {
	case TransportOther:
		return "other"
	case TransportStdio:
		return "stdio"
	case TransportHTTP:
		return "http"
	}
	return "TransportKind(" + itoa(uint64(k)) + ")"
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// ---------------------------------------------------------------- writing

// flatWriter writes one flat message. Records are placed in a region
// reserved up front, in the order they are written (depth first); strings
// follow it, in a region sized up front too (the callers count every byte),
// so that writing a string is a copy, not an append. All positions are
// indexes into b; offsets written into slots are relative to base, the
// start of the message.
type flatWriter struct {
	b    []byte
	base int // start of the message in b
	next int // next free byte of the record region
	s    int // next free byte of the string region
}

// begin reserves the header, a zeroed record region of records bytes (root
// record included) and a string region of strBytes bytes after it, and
// writes the header.
func (w *flatWriter) begin(kind Hook, records, strBytes int) {
	w.base = len(w.b)
	total := hdrSize + records + strBytes
	if uint64(total) > 1<<32-1 {
		panic("abi: flat input larger than 4 GiB")
	}
	w.b = slices.Grow(w.b, total)[:w.base+total]
	w.s = w.base + hdrSize + records
	clear(w.b[w.base:w.s])
	w.header(kind)
	w.next = w.base + hdrSize
}

// end returns the message, checking that the string region was exactly
// filled (a wrong count is a bug in this package).
func (w *flatWriter) end() []byte {
	if w.s != len(w.b) {
		panic("abi: flat writer: string bytes miscounted")
	}
	return w.b
}

// header writes the header of a message of kind at w.base, with the root
// record right after it and this version's strides.
func (w *flatWriter) header(kind Hook) {
	h := w.b[w.base:]
	binary.LittleEndian.PutUint32(h[hdrMagic:], FlatMagic)
	binary.LittleEndian.PutUint32(h[hdrVersion:], FlatVersion)
	binary.LittleEndian.PutUint32(h[hdrKind:], uint32(kind))
	binary.LittleEndian.PutUint32(h[hdrRoot:], hdrSize)
	binary.LittleEndian.PutUint32(h[hdrTypes:], numTypes)
	for t, size := range knownSize {
		binary.LittleEndian.PutUint32(h[hdrStrides+4*t:], size)
	}
}

// rec reserves n bytes of the record region and returns their position.
func (w *flatWriter) rec(n int) int {
	at := w.next
	w.next += n
	return at
}

func (w *flatWriter) put(at int, a, b uint32) {
	binary.LittleEndian.PutUint64(w.b[at:], uint64(a)|uint64(b)<<32)
}

// ref writes (offset of position at, n) into the slot at position slot.
func (w *flatWriter) ref(slot, at, n int) { w.put(slot, uint32(at-w.base), uint32(n)) }

// str writes string s into the slot at position slot: (0, 0) when empty.
// It returns the position of the string's bytes.
func (w *flatWriter) str(slot int, s string) int {
	if s == "" {
		return 0
	}
	at := w.s
	w.ref(slot, at, len(s))
	w.s = at + copy(w.b[at:], s)
	return at
}

// bytes is str for a bytes field.
func (w *flatWriter) bytes(slot int, s []byte) {
	if len(s) == 0 {
		return
	}
	at := w.s
	w.ref(slot, at, len(s))
	w.s = at + copy(w.b[at:], s)
}

// strs writes a list of strings: an array of string slots.
func (w *flatWriter) strs(slot int, ss []string) {
	if len(ss) == 0 {
		return
	}
	at := w.rec(8 * len(ss))
	w.ref(slot, at, len(ss))
	for i, s := range ss {
		w.str(at+8*i, s)
	}
}

// list reserves an array of n records of size bytes for the slot at
// position slot, and returns the position of its first record.
func (w *flatWriter) list(slot, n, size int) int {
	if n == 0 {
		return 0
	}
	at := w.rec(n * size)
	w.ref(slot, at, n)
	return at
}

// msg reserves a record of size bytes for the message slot at position
// slot (count 1: the host always writes every message).
func (w *flatWriter) msg(slot, size int) int {
	at := w.rec(size)
	w.ref(slot, at, 1)
	return at
}

func strsLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	return n
}

// size returns the bytes of records below (not including) m's own record,
// and of strings, that m needs.
func (m *Thread) size() (records, strs int) {
	records = len(m.Roots) * sizeRoot
	strs = len(m.ID) + len(m.Kind)
	for i := range m.Roots {
		r := &m.Roots[i]
		strs += len(r.ID) + len(r.Location) + len(r.EnvironmentID) + len(r.Path)
	}
	return
}

func (m *Server) size() (records, strs int) {
	records = 8*(len(m.Args)+len(m.EnabledTools)+len(m.DisabledTools)) + len(m.Credentials)*sizeCredential
	strs = len(m.Name) + len(m.Origin) + len(m.PluginID) + len(m.Transport) + len(m.URL) + len(m.Command) +
		strsLen(m.Args) + len(m.Environment) + strsLen(m.EnabledTools) + strsLen(m.DisabledTools)
	for i := range m.Credentials {
		c := &m.Credentials[i]
		strs += len(c.Kind) + len(c.Name) + len(c.EnvVar) + len(c.Owner) + len(c.ResolvesAt)
	}
	return
}

func (m *Thread) write(w *flatWriter, at int) {
	w.str(at+thID, m.ID)
	w.str(at+thKind, m.Kind)
	r := w.list(at+thRoots, len(m.Roots), sizeRoot)
	for i := range m.Roots {
		x, p := &m.Roots[i], r+i*sizeRoot
		w.str(p+rtID, x.ID)
		w.str(p+rtLocation, x.Location)
		w.str(p+rtEnvironmentID, x.EnvironmentID)
		w.str(p+rtPath, x.Path)
	}
}

func (m *Environment) write(w *flatWriter, at int) {
	w.str(at+envID, m.ID)
	var f uint32
	if m.Local {
		f |= envFlagLocal
	}
	if m.Connected {
		f |= envFlagConnected
	}
	if m.HTTPHeaderEnvVars {
		f |= envFlagHeaderEnvVars
	}
	if m.Processes {
		f |= envFlagProcesses
	}
	w.put(at+envFlags, f, 0)
}

func (m *Server) write(w *flatWriter, at int) {
	w.str(at+svName, m.Name)
	w.str(at+svOrigin, m.Origin)
	w.str(at+svPluginID, m.PluginID)
	w.str(at+svTransport, m.Transport)
	if u := w.str(at+svURL, m.URL); u != 0 {
		if i, j := urlHostSpan(m.URL); j > i {
			w.ref(at+svURLHost, u+i, j-i)
		}
	}
	w.str(at+svCommand, m.Command)
	w.strs(at+svArgs, m.Args)
	w.str(at+svEnvironment, m.Environment)
	c := w.list(at+svCredentials, len(m.Credentials), sizeCredential)
	for i := range m.Credentials {
		x, p := &m.Credentials[i], c+i*sizeCredential
		w.str(p+crKind, x.Kind)
		w.str(p+crName, x.Name)
		w.str(p+crEnvVar, x.EnvVar)
		w.str(p+crOwner, x.Owner)
		w.str(p+crResolvesAt, x.ResolvesAt)
	}
	var f uint32
	if m.Enabled {
		f |= svFlagEnabled
	}
	if m.Required {
		f |= svFlagRequired
	}
	w.put(at+svFlags, f, uint32(TransportKindOf(m.Transport)))
	w.strs(at+svEnabledTools, m.EnabledTools)
	w.strs(at+svDisabledTools, m.DisabledTools)
}

// AppendTo appends the flat encoding of m (docs/abi.md §6) to b and returns
// the extended slice. Offsets inside the encoding are relative to its
// start, so the result's b[len(b):] is a complete input.
func (m *ServersInput) AppendTo(b []byte) []byte {
	tr, ts := m.Thread.size()
	records, strs := sizeServersInput+sizeThread+tr+len(m.Environments)*sizeEnvironment+
		len(m.Servers)*sizeServer+len(m.Requirements)*sizeRequirement, ts
	for i := range m.Environments {
		strs += len(m.Environments[i].ID)
	}
	for i := range m.Servers {
		r, s := m.Servers[i].size()
		records, strs = records+r, strs+s
	}
	for i := range m.Requirements {
		r := &m.Requirements[i]
		strs += len(r.Name) + len(r.URL) + len(r.Command)
	}
	w := flatWriter{b: b}
	w.begin(HookServers, records, strs)
	root := w.rec(sizeServersInput)
	m.Thread.write(&w, w.msg(root+siThread, sizeThread))
	e := w.list(root+siEnvironments, len(m.Environments), sizeEnvironment)
	for i := range m.Environments {
		m.Environments[i].write(&w, e+i*sizeEnvironment)
	}
	s := w.list(root+siServers, len(m.Servers), sizeServer)
	for i := range m.Servers {
		m.Servers[i].write(&w, s+i*sizeServer)
	}
	if m.HasRequirements {
		w.put(root+siFlags, siFlagHasRequires, 0)
	}
	r := w.list(root+siRequirements, len(m.Requirements), sizeRequirement)
	for i := range m.Requirements {
		x, p := &m.Requirements[i], r+i*sizeRequirement
		w.str(p+rqName, x.Name)
		w.str(p+rqURL, x.URL)
		w.str(p+rqCommand, x.Command)
	}
	return w.end()
}

// AppendTo appends the flat encoding of m (docs/abi.md §6) to b and returns
// the extended slice. Offsets inside the encoding are relative to its
// start.
func (m *CredentialsInput) AppendTo(b []byte) []byte {
	tr, ts := m.Thread.size()
	sr, ss := m.Server.size()
	records := sizeCredentialsInput + sizeThread + tr + sizeServer + sr + sizeEnvironment
	strs := ts + ss + len(m.Route) + len(m.Environment.ID)
	w := flatWriter{b: b}
	w.begin(HookCredentials, records, strs)
	root := w.rec(sizeCredentialsInput)
	m.Thread.write(&w, w.msg(root+ciThread, sizeThread))
	m.Server.write(&w, w.msg(root+ciServer, sizeServer))
	w.str(root+ciRoute, m.Route)
	m.Environment.write(&w, w.msg(root+ciEnvironment, sizeEnvironment))
	return w.end()
}

// AppendTo appends the flat encoding of m (docs/abi.md §6) to b and returns
// the extended slice. Offsets inside the encoding are relative to its
// start.
func (m *ToolCallInput) AppendTo(b []byte) []byte {
	tr, ts := m.Thread.size()
	records := sizeToolCallInput + sizeThread + tr
	strs := ts + len(m.Server) + len(m.PluginID) + len(m.Tool) + len(m.Arguments) + len(m.Caller)
	w := flatWriter{b: b}
	w.begin(HookToolCall, records, strs)
	root := w.rec(sizeToolCallInput)
	m.Thread.write(&w, w.msg(root+tcThread, sizeThread))
	w.str(root+tcServer, m.Server)
	w.str(root+tcPluginID, m.PluginID)
	w.str(root+tcTool, m.Tool)
	w.bytes(root+tcArguments, m.Arguments)
	w.str(root+tcCaller, m.Caller)
	return w.end()
}
