package abi

import "strconv"

// Holding a guest to its version. The decoders read every field and enum
// value of this version; a guest that declared an older one must get what
// that version defined, so the host passes the decoded output through the
// output's HoldTo with the guest's version.

// HoldTo makes m what a guest of ABI version v meant by it: for version 1,
// the decisions' prompt and resource lists (fields 6–9, which version 1
// does not define, so its readers skip them as unknown) are dropped.
func (m *ServersOutput) HoldTo(v int) {
	if v >= 2 {
		return
	}
	for i := range m.Decisions {
		d := &m.Decisions[i]
		d.AllowPrompts, d.DenyPrompts, d.AllowResources, d.DenyResources = nil, nil, nil, nil
	}
}

// HoldTo returns an error (wrapping ErrEnum) when m's action is not
// defined in ABI version v: ASK for version 1.
func (m *ToolCallOutput) HoldTo(v int) error {
	if !m.Action.ValidIn(v) {
		return &DecodeError{Message: "ToolCallOutput", Field: 1, Err: &VersionError{Version: v, What: "action " + strconv.Itoa(int(m.Action))}}
	}
	return nil
}

// VersionError reports a value that the ABI version a guest declared does
// not define. It wraps ErrEnum.
type VersionError struct {
	Version int    // the guest's ABI version
	What    string // e.g. "action 2"
}

// Error implements error.
func (e *VersionError) Error() string {
	return e.What + " is undefined in ABI version " + strconv.Itoa(e.Version)
}

// Unwrap returns ErrEnum.
func (e *VersionError) Unwrap() error { return ErrEnum }
