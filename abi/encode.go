package abi

// Encoding. Every field number of ABI v1 is below 16, so every tag is one
// byte. Inputs are written in full form (every singular field, zero values
// included; see putField); outputs omit zero values (proto3). Embedded
// messages are written with a one-byte length placeholder that is widened in
// place when the body turns out to be 128 bytes or longer, so encoding is a
// single pass and allocates nothing beyond growing the destination slice.

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// putField writes length-delimited field t with value s, even when s is
// empty. Input messages (host to guest) are written in this "full form":
// every singular field present, in field-number order, so that the guest's
// straight-line decoder never skips a field. Omitting zero values is equally
// valid on the wire; full form only makes decoding faster.
func putField[T ~string | ~[]byte](b []byte, t byte, s T) []byte {
	b = append(b, t)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendField is putField that omits an empty value (outputs omit zero
// values). Outputs are what a wasm guest encodes, so appendField is written
// for the guest's cost model ("Cost model" in doc.go): a standalone function
// whose rare cases (growing b) leave through an early return, and whose
// common case runs straight through, writing the header with putHeader.
// putField, used for inputs by the native host, is the simpler code that is
// faster natively.
func appendField[T ~string | ~[]byte](b []byte, t byte, s T) []byte {
	n := len(s)
	if n == 0 {
		return b
	}
	if cap(b)-len(b) < n+9 {
		return appendFieldGrow(b, t, s)
	}
	k := putHeader(b, t, uint64(n))
	b = b[:k+n]
	copy(b[k:], s)
	return b
}

// appendFieldGrow is the rare path of appendField, kept out of line.
//
//go:noinline
func appendFieldGrow[T ~string | ~[]byte](b []byte, t byte, s T) []byte {
	return appendField(append(b, make([]byte, len(s)+9)...)[:len(b)], t, s)
}

// putHeader writes tag t and the varint n (< 2^35) after len(b), in the
// capacity of b (which must have room for 6 bytes), without branching, and
// returns the offset just after them.
func putHeader(b []byte, t byte, n uint64) int {
	if n >= 1<<35 {
		panic("abi: field longer than 2^35-1 bytes")
	}
	x := n&0x7f | n<<1&0x7f00 | n<<2&0x7f0000 | n<<3&0x7f000000 | n<<4&0x7f00000000
	size := 1 + (-(n >> 7))>>63 + (-(n >> 14))>>63 + (-(n >> 21))>>63 + (-(n >> 28))>>63
	x |= 0x80808080 & (1<<(8*(size-1)) - 1) // continuation bits on all but the last byte
	k := len(b)
	p := b[k : k+6]
	p[0] = t
	p[1], p[2], p[3], p[4], p[5] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24), byte(x>>32)
	return k + 1 + int(size)
}

// putBool writes field t with value v, even when false (full form).
func putBool(b []byte, t byte, v bool) []byte {
	var x byte
	if v {
		x = 1
	}
	return append(b, t, x)
}

func appendBool(b []byte, t byte, v bool) []byte {
	if v {
		b = append(b, t, 1)
	}
	return b
}

func appendUint(b []byte, t byte, v uint64) []byte {
	if v != 0 {
		b = appendVarint(append(b, t), v)
	}
	return b
}

// appendStrings writes a repeated string field. Unlike a singular field, an
// empty element is written, so the element count survives a round trip.
func appendStrings(b []byte, t byte, ss []string) []byte {
	for _, s := range ss {
		b = putField(b, t, s)
	}
	return b
}

// beginMessage writes tag t and a one-byte length placeholder; it returns the
// offset of the message body, to pass to endMessage.
func beginMessage(b []byte, t byte) ([]byte, int) {
	b = append(b, t, 0)
	return b, len(b)
}

// endMessage patches the length of the embedded message whose body starts at
// start. A short body (the common case) only patches the placeholder.
func endMessage(b []byte, start int) []byte {
	n := len(b) - start
	b[start-1] = byte(n)
	if n >= 0x80 {
		b = widenLength(b, start, n)
	}
	return b
}

// widenLength makes room for a multi-byte length before the body at start.
func widenLength(b []byte, start, n int) []byte {
	extra := 0
	for v := n >> 7; v > 0; v >>= 7 {
		extra++
	}
	for i := 0; i < extra; i++ {
		b = append(b, 0)
	}
	copy(b[start+extra:], b[start:start+n])
	i := start - 1
	v := uint64(n)
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *Thread) AppendTo(b []byte) []byte {
	b = putField(b, 1<<3|wireBytes, m.ID)
	b = putField(b, 2<<3|wireBytes, m.Kind)
	for i := range m.Roots {
		var s int
		b, s = beginMessage(b, 3<<3|wireBytes)
		b = m.Roots[i].AppendTo(b)
		b = endMessage(b, s)
	}
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *Root) AppendTo(b []byte) []byte {
	b = putField(b, 1<<3|wireBytes, m.ID)
	b = putField(b, 2<<3|wireBytes, m.Location)
	b = putField(b, 3<<3|wireBytes, m.EnvironmentID)
	b = putField(b, 4<<3|wireBytes, m.Path)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *Environment) AppendTo(b []byte) []byte {
	b = putField(b, 1<<3|wireBytes, m.ID)
	b = putBool(b, 2<<3|wireVarint, m.Local)
	b = putBool(b, 3<<3|wireVarint, m.Connected)
	b = putBool(b, 4<<3|wireVarint, m.HTTPHeaderEnvVars)
	b = putBool(b, 5<<3|wireVarint, m.Processes)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *Credential) AppendTo(b []byte) []byte {
	b = putField(b, 1<<3|wireBytes, m.Kind)
	b = putField(b, 2<<3|wireBytes, m.Name)
	b = putField(b, 3<<3|wireBytes, m.EnvVar)
	b = putField(b, 4<<3|wireBytes, m.Owner)
	b = putField(b, 5<<3|wireBytes, m.ResolvesAt)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *Server) AppendTo(b []byte) []byte {
	b = putField(b, 1<<3|wireBytes, m.Name)
	b = putField(b, 2<<3|wireBytes, m.Origin)
	b = putField(b, 3<<3|wireBytes, m.PluginID)
	b = putField(b, 4<<3|wireBytes, m.Transport)
	b = putField(b, 5<<3|wireBytes, m.URL)
	b = putField(b, 6<<3|wireBytes, m.Command)
	b = appendStrings(b, 7<<3|wireBytes, m.Args)
	b = putField(b, 8<<3|wireBytes, m.Environment)
	for i := range m.Credentials {
		var s int
		b, s = beginMessage(b, 9<<3|wireBytes)
		b = m.Credentials[i].AppendTo(b)
		b = endMessage(b, s)
	}
	b = putBool(b, 10<<3|wireVarint, m.Enabled)
	b = putBool(b, 11<<3|wireVarint, m.Required)
	b = appendStrings(b, 12<<3|wireBytes, m.EnabledTools)
	b = appendStrings(b, 13<<3|wireBytes, m.DisabledTools)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *Requirement) AppendTo(b []byte) []byte {
	b = putField(b, 1<<3|wireBytes, m.Name)
	b = putField(b, 2<<3|wireBytes, m.URL)
	b = putField(b, 3<<3|wireBytes, m.Command)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *ServersInput) AppendTo(b []byte) []byte {
	var s int
	b, s = beginMessage(b, 1<<3|wireBytes)
	b = m.Thread.AppendTo(b)
	b = endMessage(b, s)
	for i := range m.Environments {
		b, s = beginMessage(b, 2<<3|wireBytes)
		b = m.Environments[i].AppendTo(b)
		b = endMessage(b, s)
	}
	for i := range m.Servers {
		b, s = beginMessage(b, 3<<3|wireBytes)
		b = m.Servers[i].AppendTo(b)
		b = endMessage(b, s)
	}
	b = putBool(b, 4<<3|wireVarint, m.HasRequirements)
	for i := range m.Requirements {
		b, s = beginMessage(b, 5<<3|wireBytes)
		b = m.Requirements[i].AppendTo(b)
		b = endMessage(b, s)
	}
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
func (m *ServerDecision) AppendTo(b []byte) []byte {
	b = appendField(b, 1<<3|wireBytes, m.Name)
	b = appendUint(b, 2<<3|wireVarint, uint64(int64(m.Action)))
	b = appendField(b, 3<<3|wireBytes, m.Reason)
	b = appendStrings(b, 4<<3|wireBytes, m.AllowTools)
	b = appendStrings(b, 5<<3|wireBytes, m.DenyTools)
	return b
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
func (m *ServersOutput) AppendTo(b []byte) []byte {
	for i := range m.Decisions {
		var s int
		b, s = beginMessage(b, 1<<3|wireBytes)
		b = m.Decisions[i].AppendTo(b)
		b = endMessage(b, s)
	}
	return appendField(b, 15<<3|wireBytes, m.Error)
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *CredentialsInput) AppendTo(b []byte) []byte {
	var s int
	b, s = beginMessage(b, 1<<3|wireBytes)
	b = m.Thread.AppendTo(b)
	b = endMessage(b, s)
	b, s = beginMessage(b, 2<<3|wireBytes)
	b = m.Server.AppendTo(b)
	b = endMessage(b, s)
	b = putField(b, 3<<3|wireBytes, m.Route)
	b, s = beginMessage(b, 4<<3|wireBytes)
	b = m.Environment.AppendTo(b)
	return endMessage(b, s)
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
func (m *CredentialDecision) AppendTo(b []byte) []byte {
	b = appendUint(b, 1<<3|wireVarint, uint64(m.Index))
	b = appendUint(b, 2<<3|wireVarint, uint64(int64(m.Action)))
	return appendField(b, 3<<3|wireBytes, m.Reason)
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
func (m *CredentialsOutput) AppendTo(b []byte) []byte {
	for i := range m.Decisions {
		var s int
		b, s = beginMessage(b, 1<<3|wireBytes)
		b = m.Decisions[i].AppendTo(b)
		b = endMessage(b, s)
	}
	return appendField(b, 15<<3|wireBytes, m.Error)
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
// As an input message, m is written in full form (see putString).
func (m *ToolCallInput) AppendTo(b []byte) []byte {
	var s int
	b, s = beginMessage(b, 1<<3|wireBytes)
	b = m.Thread.AppendTo(b)
	b = endMessage(b, s)
	b = putField(b, 2<<3|wireBytes, m.Server)
	b = putField(b, 3<<3|wireBytes, m.PluginID)
	b = putField(b, 4<<3|wireBytes, m.Tool)
	b = putField(b, 5<<3|wireBytes, m.Arguments)
	return putField(b, 6<<3|wireBytes, m.Caller)
}

// AppendTo appends the wire encoding of m to b and returns the extended slice.
func (m *ToolCallOutput) AppendTo(b []byte) []byte {
	b = appendUint(b, 1<<3|wireVarint, uint64(int64(m.Action)))
	b = appendField(b, 2<<3|wireBytes, m.Reason)
	b = appendBool(b, 3<<3|wireVarint, m.Rewrite)
	b = appendField(b, 4<<3|wireBytes, m.Arguments)
	return appendField(b, 15<<3|wireBytes, m.Error)
}
