package sdk

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

// URLHost returns the host of rawurl without port, userinfo or IPv6
// brackets, as a substring of rawurl (no allocation, case preserved):
//
//	URLHost("https://user@API.Example.com:8443/mcp") == "API.Example.com"
//	URLHost("http://[::1]:7777/mcp")                  == "::1"
//
// The authority ends at the first '/', '?', '#' or '\' (browsers treat '\'
// as '/'), and the host follows the last '@' in it, so
// "http://good.com@evil.com/" yields "evil.com". A string without "://" is
// parsed as if it started with the authority. The result is "" when there is
// no host. Compare hosts with [HostIn], which ignores ASCII case. (This is
// abi.URLHost.)
//
// A server's URL host is in its input already: use ServerView.URLHost,
// which the host computed with this function, rather than
// URLHost(s.URL()). In a wasm guest, URLHost parses a URL of 8 to 64 bytes
// without loops (helpers_fast.go), but that still costs a few hundred
// nanoseconds.
func URLHost(rawurl string) string {
	if fastHelpers {
		return urlHostFast(rawurl)
	}
	return abi.URLHost(rawurl)
}

// HostIn reports whether host matches one of the allowed patterns, ignoring
// ASCII case and one trailing dot. A pattern is an exact host ("localhost",
// "127.0.0.1", "::1") or "*.suffix", which matches any host with at least
// one more label ("*.example.com" matches "a.example.com" and
// "a.b.example.com" but not "example.com"). An empty host matches nothing.
// Only ASCII letters are folded: a host with other bytes must match them
// exactly (hosts are ASCII; IDNs are sent in punycode).
//
// In a wasm guest, hosts and patterns of 8 to 16 bytes are compared a word
// at a time, four patterns at a time, without loops (helpers_fast.go).
func HostIn(host string, allowed ...string) bool {
	if fastHelpers {
		return hostInFast(host, allowed)
	}
	return hostInSlow(host, allowed)
}

// HostSet is a list of host patterns prepared once for matching many
// hosts. A policy that checks every server against the same list builds it
// in a package variable,
//
//	var allowed = sdk.NewHostSet("*.example.com", "127.0.0.1", "localhost")
//
// and calls allowed.Match(host) per server. Match follows HostIn's rules;
// it saves the per-call work HostIn does on its list (in a wasm guest,
// checking that the list is the one it prepared last). A HostSet is
// immutable and safe for concurrent use.
type HostSet struct {
	patterns []string
	// The wasm fast path's form of patterns (helpers_fast.go), when fast:
	// the first four lanes, then groups of four.
	first [4]lane
	more  []lane
	fast  bool
}

// NewHostSet returns the set of patterns (see HostIn for their syntax). It
// copies them, so views of a hook input may be passed.
func NewHostSet(patterns ...string) *HostSet {
	s := &HostSet{patterns: make([]string, len(patterns))}
	for i, p := range patterns {
		s.patterns[i] = strings.Clone(p)
	}
	s.first, s.more, s.fast = prepareLanes(s.patterns)
	return s
}

// Match reports whether host matches one of the set's patterns, exactly as
// HostIn(host, patterns...) does.
func (s *HostSet) Match(host string) bool {
	// Unlike URLHost and HostIn, the word-at-a-time match is the faster
	// one natively too (≈10 ns against ≈16 ns a host), so both builds
	// use it.
	return s.matchFast(host)
}

// hostInSlow is HostIn for any input: the reference implementation.
func hostInSlow(host string, allowed []string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return false
	}
	for _, p := range allowed {
		if patternMatches(host, p) {
			return true
		}
	}
	return false
}

// patternMatches reports whether host (trailing dot removed, not empty)
// matches pattern p.
func patternMatches(host, p string) bool {
	p = strings.TrimSuffix(p, ".")
	if suffix, ok := strings.CutPrefix(p, "*"); ok {
		return len(suffix) > 1 && suffix[0] == '.' && len(host) > len(suffix) &&
			equalFoldASCII(host[len(host)-len(suffix):], suffix)
	}
	return p != "" && equalFoldASCII(host, p)
}

// equalFoldASCII reports whether a and b are equal ignoring ASCII case.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// JSONStringField returns the string value of the top-level member key of
// the JSON object args (a tool_call's arguments). It returns ("", false)
// when the member is absent, when its value is not a string, or when args is
// not a JSON object.
//
// Keys are compared after unescaping, so "p\u0061th" matches "path", and
// when a key appears more than once the last occurrence counts (what Go's
// encoding/json and JavaScript do), so a policy sees the value the server
// will see. The value is a view into args (no allocation) unless it contains
// escapes, in which case it is unescaped into a new string. Policies must
// treat "not found" as a possible bypass attempt where that matters.
//
// The host validates that arguments are a JSON object before calling the
// hook; this scanner is strict about structure but does not validate
// numbers and literals.
func JSONStringField(args []byte, key string) (string, bool) {
	i := skipSpace(args, 0)
	if i >= len(args) || args[i] != '{' {
		return "", false
	}
	i = skipSpace(args, i+1)
	var val string
	found := false
	if i < len(args) && args[i] == '}' {
		i++
	} else {
		for {
			// Member name.
			if i >= len(args) || args[i] != '"' {
				return "", false
			}
			end, esc := scanString(args, i)
			if end < 0 {
				return "", false
			}
			match := keyEqual(args[i+1:end-1], esc, key)
			i = skipSpace(args, end)
			if i >= len(args) || args[i] != ':' {
				return "", false
			}
			i = skipSpace(args, i+1)
			// Value.
			if i >= len(args) {
				return "", false
			}
			if args[i] == '"' {
				end, esc = scanString(args, i)
				if end < 0 {
					return "", false
				}
				if match {
					if val, found = stringValue(args[i+1:end-1], esc); !found {
						return "", false // invalid escape
					}
				}
			} else {
				if end = skipValue(args, i); end < 0 {
					return "", false
				}
				if match {
					val, found = "", false
				}
			}
			i = skipSpace(args, end)
			if i < len(args) && args[i] == ',' {
				i = skipSpace(args, i+1)
				continue
			}
			if i < len(args) && args[i] == '}' {
				i++
				break
			}
			return "", false
		}
	}
	if skipSpace(args, i) != len(args) {
		return "", false
	}
	return val, found
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the JSON string whose opening quote is at b[i]. It
// returns the offset after the closing quote and whether the string contains
// escapes, or -1 if the string is unterminated or contains a raw control
// character.
func scanString(b []byte, i int) (int, bool) {
	esc := false
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			esc = true
			i++
		case c < 0x20:
			return -1, false
		}
	}
	return -1, false
}

// skipValue skips a non-string JSON value at b[i] (an object, an array, a
// number or a literal) and returns the offset after it, or -1.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			case '"':
				end, _ := scanString(b, i)
				if end < 0 {
					return -1
				}
				i = end
				continue
			}
			i++
		}
		return -1
	case '}', ']', ',', ':':
		return -1
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if i == start {
				return -1
			}
			return i
		}
		i++
	}
	return i
}

// keyEqual reports whether the raw JSON string content raw equals key.
func keyEqual(raw []byte, esc bool, key string) bool {
	if !esc {
		return string(raw) == key // no allocation: the compiler compares in place
	}
	var buf [128]byte
	u, ok := unescape(buf[:0], raw)
	return ok && string(u) == key
}

// stringValue returns the raw JSON string content as a Go string: a view
// into raw when it has no escapes, an unescaped copy otherwise. It reports
// false for an invalid escape.
func stringValue(raw []byte, esc bool) (string, bool) {
	if !esc {
		return unsafe.String(unsafe.SliceData(raw), len(raw)), true
	}
	u, ok := unescape(make([]byte, 0, len(raw)), raw)
	return string(u), ok
}

// unescape appends the unescaped form of the JSON string content raw to dst.
// Invalid \u sequences and unpaired surrogates become U+FFFD, as in
// encoding/json.
func unescape(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(raw) {
			return dst, false
		}
		switch raw[i] {
		case '"', '\\', '/':
			dst = append(dst, raw[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i+1)
			if !ok {
				return dst, false
			}
			i += 4
			if r >= 0xD800 && r < 0xDC00 {
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2, ok := hex4(raw, i+3); ok && r2 >= 0xDC00 && r2 < 0xE000 {
						r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
						i += 6
					}
				}
			}
			dst = utf8.AppendRune(dst, r) // surrogates left alone become U+FFFD
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
