package abi

// The output decoders, used by the host: protobuf wire format (docs/abi.md
// §7), written out per message from the schema in types.go. When a field is
// added, add it to the message's merge loop and to its known-field mask at
// the end of the file.
//
// Each Unmarshal resets the message and merges b into it:
//
//   - ZERO-COPY: every string (and []byte) field of the result is a view into
//     b. The decoded message is valid only while b is unchanged and alive;
//     overwrite or reuse b and the strings change under you. Copy
//     (strings.Clone) what must outlive b.
//   - Repeated fields are truncated to [:0] and refilled in place, reusing
//     their capacity and the capacity of their elements' own slices, so
//     decoding into a warm message allocates nothing.
//   - Unknown fields of any wire type (0, 1, 2, 5) are skipped.
//   - Malformed input returns a *DecodeError and never panics; m is then
//     partially filled and must not be used.
//   - A singular embedded message that appears more than once is merged, as
//     in protobuf; other singular fields: last one wins.

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
// An undefined enum value is an error (ErrEnum): garbage never reads as a
// decision.
func (m *ServerDecision) Unmarshal(b []byte) error {
	*m = ServerDecision{AllowTools: m.AllowTools[:0], DenyTools: m.DenyTools[:0]}
	return m.merge(b, 0)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *ServerDecision) merge(b []byte, i int) error {
	var s string
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("ServerDecision", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.Name, i = str(b, j, v)
		case 2<<3 | wireVarint:
			if v > uint64(ServerHide) {
				return decodeErr("ServerDecision", b, i, codeEnum)
			}
			m.Action, i = ServerAction(v), j
		case 3<<3 | wireBytes:
			m.Reason, i = str(b, j, v)
		case 4<<3 | wireBytes:
			s, i = str(b, j, v)
			m.AllowTools = append(m.AllowTools, s)
		case 5<<3 | wireBytes:
			s, i = str(b, j, v)
			m.DenyTools = append(m.DenyTools, s)
		default:
			if j = skip(b, i, knownServerDecision); j < 0 {
				return decodeErr("ServerDecision", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *ServersOutput) Unmarshal(b []byte) error {
	*m = ServersOutput{Decisions: m.Decisions[:0]}
	return m.merge(b, 0)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *ServersOutput) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("ServersOutput", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.Decisions = extend(m.Decisions)
			if err := m.Decisions[len(m.Decisions)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("ServersOutput", 1, i, err)
			}
			i = j + int(v)
		case 15<<3 | wireBytes:
			m.Error, i = str(b, j, v)
		default:
			if j = skip(b, i, knownServersOutput); j < 0 {
				return decodeErr("ServersOutput", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
// An undefined enum value is an error (ErrEnum): garbage never reads as a
// decision.
func (m *CredentialDecision) Unmarshal(b []byte) error {
	*m = CredentialDecision{}
	return m.merge(b, 0)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *CredentialDecision) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("CredentialDecision", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireVarint:
			if v > 1<<32-1 {
				return decodeErr("CredentialDecision", b, i, codeRange)
			}
			m.Index, i = uint32(v), j
		case 2<<3 | wireVarint:
			if v > uint64(CredentialDeny) {
				return decodeErr("CredentialDecision", b, i, codeEnum)
			}
			m.Action, i = CredentialAction(v), j
		case 3<<3 | wireBytes:
			m.Reason, i = str(b, j, v)
		default:
			if j = skip(b, i, knownCredentialDecision); j < 0 {
				return decodeErr("CredentialDecision", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *CredentialsOutput) Unmarshal(b []byte) error {
	*m = CredentialsOutput{Decisions: m.Decisions[:0]}
	return m.merge(b, 0)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *CredentialsOutput) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("CredentialsOutput", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.Decisions = extend(m.Decisions)
			if err := m.Decisions[len(m.Decisions)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("CredentialsOutput", 1, i, err)
			}
			i = j + int(v)
		case 15<<3 | wireBytes:
			m.Error, i = str(b, j, v)
		default:
			if j = skip(b, i, knownCredentialsOutput); j < 0 {
				return decodeErr("CredentialsOutput", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
// An undefined enum value is an error (ErrEnum): garbage never reads as a
// decision.
func (m *ToolCallOutput) Unmarshal(b []byte) error {
	*m = ToolCallOutput{}
	return m.merge(b, 0)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *ToolCallOutput) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("ToolCallOutput", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireVarint:
			if v > uint64(ToolCallDeny) {
				return decodeErr("ToolCallOutput", b, i, codeEnum)
			}
			m.Action, i = ToolCallAction(v), j
		case 2<<3 | wireBytes:
			m.Reason, i = str(b, j, v)
		case 3<<3 | wireVarint:
			m.Rewrite, i = v != 0, j
		case 4<<3 | wireBytes:
			m.Arguments, i = view(b, j, v)
		case 15<<3 | wireBytes:
			m.Error, i = str(b, j, v)
		default:
			if j = skip(b, i, knownToolCallOutput); j < 0 {
				return decodeErr("ToolCallOutput", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Known-field masks: bit n set = field n is defined (used by skip to tell a
// wire type mismatch from an unknown field).
const (
	knownServerDecision     = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
	knownServersOutput      = 1<<1 | 1<<15
	knownCredentialDecision = 1<<1 | 1<<2 | 1<<3
	knownCredentialsOutput  = 1<<1 | 1<<15
	knownToolCallOutput     = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<15
)
