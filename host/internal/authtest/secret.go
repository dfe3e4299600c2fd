package authtest

import (
	"fmt"
	"log/slog"
)

// Secret holds a credential the fixture issued or saw: an access or refresh token, a
// client secret, an authorization code or an Authorization header. Its value is there
// for comparisons (==, or Reveal when a test must hand it on); every way of printing
// it — fmt verbs including %#v, JSON, slog — shows only whether it is empty, so a
// record can be logged or put in a failure message without leaking the value.
type Secret string

const redacted = "[redacted]"

// Reveal returns the value itself. Never print it.
func (s Secret) Reveal() string { return string(s) }

// String shows "[redacted]", or "" when the secret is empty.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Format applies to every verb, so %v, %s, %q, %x and %#v all stay redacted.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", s.String())
	default:
		fmt.Fprint(f, s.String())
	}
}

// MarshalJSON encodes the redacted form.
func (s Secret) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%q", s.String()), nil
}

// LogValue keeps slog from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
