package abi

// JSON form. The wire encoding is the contract between host and guest; the JSON form of the
// same messages (camelCase field names, actions as their names, arguments as JSON values)
// is what people write: `warden policy eval` inputs and `warden policy test` fixtures. It
// needs no import: struct tags and these methods are all encoding/json looks for.

// RawJSON is a JSON value carried as bytes (tool-call arguments). On the wire it is a bytes
// field; in the JSON form it is the JSON value itself, not base64.
type RawJSON []byte

// MarshalJSON returns r itself ("null" when empty).
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON stores a copy of the JSON value.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = nil
		return nil
	}
	*r = append((*r)[:0], b...)
	return nil
}

// MarshalText returns the action's name ("expose", "disable", "hide").
func (a ServerAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses an action name.
func (a *ServerAction) UnmarshalText(b []byte) error {
	v, err := ParseServerAction(string(b))
	*a = v
	return err
}

// MarshalText returns the action's name ("unspecified", "local", "executor", "deny").
func (a CredentialAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses an action name.
func (a *CredentialAction) UnmarshalText(b []byte) error {
	v, err := ParseCredentialAction(string(b))
	*a = v
	return err
}

// MarshalText returns the action's name ("allow", "deny", "ask").
func (a ToolCallAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses an action name.
func (a *ToolCallAction) UnmarshalText(b []byte) error {
	v, err := ParseToolCallAction(string(b))
	*a = v
	return err
}

// MarshalText returns the action's name ("pass", "rewrite", "error").
func (a ToolResultAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses an action name.
func (a *ToolResultAction) UnmarshalText(b []byte) error {
	v, err := ParseToolResultAction(string(b))
	*a = v
	return err
}
