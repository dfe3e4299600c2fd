package abi

// The decoders below are written out per message from the schema in
// types.go (mechanically: every message has the same shape). When a field is
// added, add it to both the fast path of Unmarshal and the general loop
// (merge), and to the known-field mask at the end of the file.

// Decoding. Each Unmarshal resets the message and merges b into it:
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
//
// Input messages (the ones a guest decodes) first run a straight-line fast
// path that expects fields in field-number order, as AppendTo writes them.
// Singular string and bool fields are taken without branches (takeStr,
// takeBool); it decodes into a local copy (stack stores need no GC write
// barrier) that is stored into m once, and hands over to the general loop
// (merge) at the first field it cannot take, so any valid encoding decodes
// the same. See "Cost model" in doc.go for why the fast path is shaped like
// this.

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *Thread) Unmarshal(b []byte) error {
	x := Thread{Roots: m.Roots[:0]}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		x.ID, i = takeStr(b, i, t, v, 1<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Kind, i = takeStr(b, i, t, v, 2<<3|wireBytes, j)
		t, v, j = field(b, i)
		if t == 3<<3|wireBytes {
			for {
				x.Roots = extend(x.Roots)
				if err := x.Roots[len(x.Roots)-1].Unmarshal(b[j : j+int(v)]); err != nil {
					return nestedErr("Thread", 3, i, err)
				}
				i = j + int(v)
				t, v, j = field(b, i)
				if t != 3<<3|wireBytes {
					break
				}
			}
		}
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *Thread) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("Thread", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.ID, i = str(b, j, v)
		case 2<<3 | wireBytes:
			m.Kind, i = str(b, j, v)
		case 3<<3 | wireBytes:
			m.Roots = extend(m.Roots)
			if err := m.Roots[len(m.Roots)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("Thread", 3, i, err)
			}
			i = j + int(v)
		default:
			if j = skip(b, i, knownThread); j < 0 {
				return decodeErr("Thread", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *Root) Unmarshal(b []byte) error {
	x := Root{}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		x.ID, i = takeStr(b, i, t, v, 1<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Location, i = takeStr(b, i, t, v, 2<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.EnvironmentID, i = takeStr(b, i, t, v, 3<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Path, i = takeStr(b, i, t, v, 4<<3|wireBytes, j)
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *Root) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("Root", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.ID, i = str(b, j, v)
		case 2<<3 | wireBytes:
			m.Location, i = str(b, j, v)
		case 3<<3 | wireBytes:
			m.EnvironmentID, i = str(b, j, v)
		case 4<<3 | wireBytes:
			m.Path, i = str(b, j, v)
		default:
			if j = skip(b, i, knownRoot); j < 0 {
				return decodeErr("Root", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *Environment) Unmarshal(b []byte) error {
	x := Environment{}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		x.ID, i = takeStr(b, i, t, v, 1<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Local, i = takeBool(i, t, v, 2<<3|wireVarint, j)
		t, v, j = field(b, i)
		x.Connected, i = takeBool(i, t, v, 3<<3|wireVarint, j)
		t, v, j = field(b, i)
		x.HTTPHeaderEnvVars, i = takeBool(i, t, v, 4<<3|wireVarint, j)
		t, v, j = field(b, i)
		x.Processes, i = takeBool(i, t, v, 5<<3|wireVarint, j)
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *Environment) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("Environment", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.ID, i = str(b, j, v)
		case 2<<3 | wireVarint:
			m.Local, i = v != 0, j
		case 3<<3 | wireVarint:
			m.Connected, i = v != 0, j
		case 4<<3 | wireVarint:
			m.HTTPHeaderEnvVars, i = v != 0, j
		case 5<<3 | wireVarint:
			m.Processes, i = v != 0, j
		default:
			if j = skip(b, i, knownEnvironment); j < 0 {
				return decodeErr("Environment", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *Credential) Unmarshal(b []byte) error {
	x := Credential{}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		x.Kind, i = takeStr(b, i, t, v, 1<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Name, i = takeStr(b, i, t, v, 2<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.EnvVar, i = takeStr(b, i, t, v, 3<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Owner, i = takeStr(b, i, t, v, 4<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.ResolvesAt, i = takeStr(b, i, t, v, 5<<3|wireBytes, j)
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *Credential) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("Credential", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.Kind, i = str(b, j, v)
		case 2<<3 | wireBytes:
			m.Name, i = str(b, j, v)
		case 3<<3 | wireBytes:
			m.EnvVar, i = str(b, j, v)
		case 4<<3 | wireBytes:
			m.Owner, i = str(b, j, v)
		case 5<<3 | wireBytes:
			m.ResolvesAt, i = str(b, j, v)
		default:
			if j = skip(b, i, knownCredential); j < 0 {
				return decodeErr("Credential", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *Server) Unmarshal(b []byte) error {
	x := Server{Args: m.Args[:0], Credentials: m.Credentials[:0], EnabledTools: m.EnabledTools[:0], DisabledTools: m.DisabledTools[:0]}
	var s string
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		x.Name, i = takeStr(b, i, t, v, 1<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Origin, i = takeStr(b, i, t, v, 2<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.PluginID, i = takeStr(b, i, t, v, 3<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Transport, i = takeStr(b, i, t, v, 4<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.URL, i = takeStr(b, i, t, v, 5<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Command, i = takeStr(b, i, t, v, 6<<3|wireBytes, j)
		t, v, j = field(b, i)
		if t == 7<<3|wireBytes {
			for {
				s, i = str(b, j, v)
				x.Args = append(x.Args, s)
				t, v, j = field(b, i)
				if t != 7<<3|wireBytes {
					break
				}
			}
		}
		x.Environment, i = takeStr(b, i, t, v, 8<<3|wireBytes, j)
		t, v, j = field(b, i)
		if t == 9<<3|wireBytes {
			for {
				x.Credentials = extend(x.Credentials)
				if err := x.Credentials[len(x.Credentials)-1].Unmarshal(b[j : j+int(v)]); err != nil {
					return nestedErr("Server", 9, i, err)
				}
				i = j + int(v)
				t, v, j = field(b, i)
				if t != 9<<3|wireBytes {
					break
				}
			}
		}
		x.Enabled, i = takeBool(i, t, v, 10<<3|wireVarint, j)
		t, v, j = field(b, i)
		x.Required, i = takeBool(i, t, v, 11<<3|wireVarint, j)
		t, v, j = field(b, i)
		if t == 12<<3|wireBytes {
			for {
				s, i = str(b, j, v)
				x.EnabledTools = append(x.EnabledTools, s)
				t, v, j = field(b, i)
				if t != 12<<3|wireBytes {
					break
				}
			}
		}
		if t == 13<<3|wireBytes {
			for {
				s, i = str(b, j, v)
				x.DisabledTools = append(x.DisabledTools, s)
				t, v, j = field(b, i)
				if t != 13<<3|wireBytes {
					break
				}
			}
		}
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *Server) merge(b []byte, i int) error {
	var s string
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("Server", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.Name, i = str(b, j, v)
		case 2<<3 | wireBytes:
			m.Origin, i = str(b, j, v)
		case 3<<3 | wireBytes:
			m.PluginID, i = str(b, j, v)
		case 4<<3 | wireBytes:
			m.Transport, i = str(b, j, v)
		case 5<<3 | wireBytes:
			m.URL, i = str(b, j, v)
		case 6<<3 | wireBytes:
			m.Command, i = str(b, j, v)
		case 7<<3 | wireBytes:
			s, i = str(b, j, v)
			m.Args = append(m.Args, s)
		case 8<<3 | wireBytes:
			m.Environment, i = str(b, j, v)
		case 9<<3 | wireBytes:
			m.Credentials = extend(m.Credentials)
			if err := m.Credentials[len(m.Credentials)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("Server", 9, i, err)
			}
			i = j + int(v)
		case 10<<3 | wireVarint:
			m.Enabled, i = v != 0, j
		case 11<<3 | wireVarint:
			m.Required, i = v != 0, j
		case 12<<3 | wireBytes:
			s, i = str(b, j, v)
			m.EnabledTools = append(m.EnabledTools, s)
		case 13<<3 | wireBytes:
			s, i = str(b, j, v)
			m.DisabledTools = append(m.DisabledTools, s)
		default:
			if j = skip(b, i, knownServer); j < 0 {
				return decodeErr("Server", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *Requirement) Unmarshal(b []byte) error {
	x := Requirement{}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		x.Name, i = takeStr(b, i, t, v, 1<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.URL, i = takeStr(b, i, t, v, 2<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Command, i = takeStr(b, i, t, v, 3<<3|wireBytes, j)
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *Requirement) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("Requirement", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			m.Name, i = str(b, j, v)
		case 2<<3 | wireBytes:
			m.URL, i = str(b, j, v)
		case 3<<3 | wireBytes:
			m.Command, i = str(b, j, v)
		default:
			if j = skip(b, i, knownRequirement); j < 0 {
				return decodeErr("Requirement", b, i, j)
			}
			i = j
		}
	}
	return nil
}

// Unmarshal decodes b into m, reusing m's slices. Strings are views into b,
// valid only while b is unchanged (see the package documentation).
func (m *ServersInput) Unmarshal(b []byte) error {
	x := ServersInput{Thread: Thread{Roots: m.Thread.Roots[:0]}, Environments: m.Environments[:0], Servers: m.Servers[:0], Requirements: m.Requirements[:0]}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = 0, 0, 0
		if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
			w := uint64(b[i+2])
			t, v = uint64(b[i]), uint64(b[i+1])
			two := v >> 7
			v = v&0x7f | w<<7&-two
			j = i + 2 + int(two)
			t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
		}
		if t == 1<<3|wireBytes {
			if err := x.Thread.Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("ServersInput", 1, i, err)
			}
			i = j + int(v)
			t, v, j = 0, 0, 0
			if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
				w := uint64(b[i+2])
				t, v = uint64(b[i]), uint64(b[i+1])
				two := v >> 7
				v = v&0x7f | w<<7&-two
				j = i + 2 + int(two)
				t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
			}
		}
		if t == 2<<3|wireBytes {
			for {
				x.Environments = extend(x.Environments)
				if err := x.Environments[len(x.Environments)-1].Unmarshal(b[j : j+int(v)]); err != nil {
					return nestedErr("ServersInput", 2, i, err)
				}
				i = j + int(v)
				t, v, j = 0, 0, 0
				if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
					w := uint64(b[i+2])
					t, v = uint64(b[i]), uint64(b[i+1])
					two := v >> 7
					v = v&0x7f | w<<7&-two
					j = i + 2 + int(two)
					t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
				}
				if t != 2<<3|wireBytes {
					break
				}
			}
		}
		if t == 3<<3|wireBytes {
			for {
				x.Servers = extend(x.Servers)
				if err := x.Servers[len(x.Servers)-1].Unmarshal(b[j : j+int(v)]); err != nil {
					return nestedErr("ServersInput", 3, i, err)
				}
				i = j + int(v)
				t, v, j = 0, 0, 0
				if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
					w := uint64(b[i+2])
					t, v = uint64(b[i]), uint64(b[i+1])
					two := v >> 7
					v = v&0x7f | w<<7&-two
					j = i + 2 + int(two)
					t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
				}
				if t != 3<<3|wireBytes {
					break
				}
			}
		}
		x.HasRequirements, i = takeBool(i, t, v, 4<<3|wireVarint, j)
		t, v, j = 0, 0, 0
		if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
			w := uint64(b[i+2])
			t, v = uint64(b[i]), uint64(b[i+1])
			two := v >> 7
			v = v&0x7f | w<<7&-two
			j = i + 2 + int(two)
			t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
		}
		if t == 5<<3|wireBytes {
			for {
				x.Requirements = extend(x.Requirements)
				if err := x.Requirements[len(x.Requirements)-1].Unmarshal(b[j : j+int(v)]); err != nil {
					return nestedErr("ServersInput", 5, i, err)
				}
				i = j + int(v)
				t, v, j = 0, 0, 0
				if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
					w := uint64(b[i+2])
					t, v = uint64(b[i]), uint64(b[i+1])
					two := v >> 7
					v = v&0x7f | w<<7&-two
					j = i + 2 + int(two)
					t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
				}
				if t != 5<<3|wireBytes {
					break
				}
			}
		}
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *ServersInput) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("ServersInput", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			if err := m.Thread.merge(b[j:j+int(v)], 0); err != nil {
				return nestedErr("ServersInput", 1, i, err)
			}
			i = j + int(v)
		case 2<<3 | wireBytes:
			m.Environments = extend(m.Environments)
			if err := m.Environments[len(m.Environments)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("ServersInput", 2, i, err)
			}
			i = j + int(v)
		case 3<<3 | wireBytes:
			m.Servers = extend(m.Servers)
			if err := m.Servers[len(m.Servers)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("ServersInput", 3, i, err)
			}
			i = j + int(v)
		case 4<<3 | wireVarint:
			m.HasRequirements, i = v != 0, j
		case 5<<3 | wireBytes:
			m.Requirements = extend(m.Requirements)
			if err := m.Requirements[len(m.Requirements)-1].Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("ServersInput", 5, i, err)
			}
			i = j + int(v)
		default:
			if j = skip(b, i, knownServersInput); j < 0 {
				return decodeErr("ServersInput", b, i, j)
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
func (m *CredentialsInput) Unmarshal(b []byte) error {
	x := CredentialsInput{Thread: Thread{Roots: m.Thread.Roots[:0]}, Server: Server{Args: m.Server.Args[:0], Credentials: m.Server.Credentials[:0], EnabledTools: m.Server.EnabledTools[:0], DisabledTools: m.Server.DisabledTools[:0]}}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = 0, 0, 0
		if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
			w := uint64(b[i+2])
			t, v = uint64(b[i]), uint64(b[i+1])
			two := v >> 7
			v = v&0x7f | w<<7&-two
			j = i + 2 + int(two)
			t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
		}
		if t == 1<<3|wireBytes {
			if err := x.Thread.Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("CredentialsInput", 1, i, err)
			}
			i = j + int(v)
			t, v, j = 0, 0, 0
			if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
				w := uint64(b[i+2])
				t, v = uint64(b[i]), uint64(b[i+1])
				two := v >> 7
				v = v&0x7f | w<<7&-two
				j = i + 2 + int(two)
				t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
			}
		}
		if t == 2<<3|wireBytes {
			if err := x.Server.Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("CredentialsInput", 2, i, err)
			}
			i = j + int(v)
			t, v, j = 0, 0, 0
			if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
				w := uint64(b[i+2])
				t, v = uint64(b[i]), uint64(b[i+1])
				two := v >> 7
				v = v&0x7f | w<<7&-two
				j = i + 2 + int(two)
				t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
			}
		}
		x.Route, i = takeStr(b, i, t, v, 3<<3|wireBytes, j)
		t, v, j = 0, 0, 0
		if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
			w := uint64(b[i+2])
			t, v = uint64(b[i]), uint64(b[i+1])
			two := v >> 7
			v = v&0x7f | w<<7&-two
			j = i + 2 + int(two)
			t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
		}
		if t == 4<<3|wireBytes {
			if err := x.Environment.Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("CredentialsInput", 4, i, err)
			}
			i = j + int(v)
			t, v, j = 0, 0, 0
			if i+2 < len(b) { // fieldM: like field, but takes one- or two-byte values
				w := uint64(b[i+2])
				t, v = uint64(b[i]), uint64(b[i+1])
				two := v >> 7
				v = v&0x7f | w<<7&-two
				j = i + 2 + int(two)
				t &= (t>>7 | w>>7&two | uint64(len(b)-j-int(v&-(t>>1&1)))>>63) - 1
			}
		}
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *CredentialsInput) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("CredentialsInput", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			if err := m.Thread.merge(b[j:j+int(v)], 0); err != nil {
				return nestedErr("CredentialsInput", 1, i, err)
			}
			i = j + int(v)
		case 2<<3 | wireBytes:
			if err := m.Server.merge(b[j:j+int(v)], 0); err != nil {
				return nestedErr("CredentialsInput", 2, i, err)
			}
			i = j + int(v)
		case 3<<3 | wireBytes:
			m.Route, i = str(b, j, v)
		case 4<<3 | wireBytes:
			if err := m.Environment.merge(b[j:j+int(v)], 0); err != nil {
				return nestedErr("CredentialsInput", 4, i, err)
			}
			i = j + int(v)
		default:
			if j = skip(b, i, knownCredentialsInput); j < 0 {
				return decodeErr("CredentialsInput", b, i, j)
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
func (m *ToolCallInput) Unmarshal(b []byte) error {
	x := ToolCallInput{Thread: Thread{Roots: m.Thread.Roots[:0]}}
	i := 0
	if len(b) >= 2 { // field needs two bytes; shorter input goes to merge
		var t, v uint64
		var j int
		t, v, j = field(b, i)
		if t == 1<<3|wireBytes {
			if err := x.Thread.Unmarshal(b[j : j+int(v)]); err != nil {
				return nestedErr("ToolCallInput", 1, i, err)
			}
			i = j + int(v)
			t, v, j = field(b, i)
		}
		x.Server, i = takeStr(b, i, t, v, 2<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.PluginID, i = takeStr(b, i, t, v, 3<<3|wireBytes, j)
		t, v, j = field(b, i)
		x.Tool, i = takeStr(b, i, t, v, 4<<3|wireBytes, j)
		t, v, j = field(b, i)
		if t == 5<<3|wireBytes {
			x.Arguments, i = view(b, j, v)
			t, v, j = field(b, i)
		}
		x.Caller, i = takeStr(b, i, t, v, 6<<3|wireBytes, j)
	}
	*m = x
	if i == len(b) {
		return nil
	}
	return m.merge(b, i)
}

// merge decodes the fields of b from offset i on into m, without resetting m.
func (m *ToolCallInput) merge(b []byte, i int) error {
	for i < len(b) {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr("ToolCallInput", b, i, j)
			}
		}
		switch t {
		case 1<<3 | wireBytes:
			if err := m.Thread.merge(b[j:j+int(v)], 0); err != nil {
				return nestedErr("ToolCallInput", 1, i, err)
			}
			i = j + int(v)
		case 2<<3 | wireBytes:
			m.Server, i = str(b, j, v)
		case 3<<3 | wireBytes:
			m.PluginID, i = str(b, j, v)
		case 4<<3 | wireBytes:
			m.Tool, i = str(b, j, v)
		case 5<<3 | wireBytes:
			m.Arguments, i = view(b, j, v)
		case 6<<3 | wireBytes:
			m.Caller, i = str(b, j, v)
		default:
			if j = skip(b, i, knownToolCallInput); j < 0 {
				return decodeErr("ToolCallInput", b, i, j)
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
	knownThread             = 1<<1 | 1<<2 | 1<<3
	knownRoot               = 1<<1 | 1<<2 | 1<<3 | 1<<4
	knownEnvironment        = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
	knownCredential         = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
	knownServer             = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12 | 1<<13
	knownRequirement        = 1<<1 | 1<<2 | 1<<3
	knownServersInput       = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
	knownServerDecision     = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
	knownServersOutput      = 1<<1 | 1<<15
	knownCredentialsInput   = 1<<1 | 1<<2 | 1<<3 | 1<<4
	knownCredentialDecision = 1<<1 | 1<<2 | 1<<3
	knownCredentialsOutput  = 1<<1 | 1<<15
	knownToolCallInput      = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6
	knownToolCallOutput     = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<15
)
