// Package redact finds well-known secret shapes in text and in the string values of raw
// JSON and replaces each with "[REDACTED:<kind>]". It is the redact-secrets policy's logic,
// kept free of the SDK so that it is tested and measured natively; it imports only the
// standard library and builds for wasip1.
//
// The scanner is hand-written (one pass, one switch on the byte at each position, no
// regexp): a policy runs on every tool call and result, inside a wasm sandbox whose
// interrupt checks make every function call and loop iteration cost more than natively.
package redact

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is a kind of secret the scanner recognises.
type Kind uint8

// The kinds, in report order.
const (
	AWSAccessKeyID Kind = iota // AKIA/ASIA + 16 [A-Z0-9]
	AWSSecretKey               // 40 [A-Za-z0-9/+=] after an aws_secret_access_key-like name
	GitHubToken                // ghp_/gho_/ghu_/ghs_/ghr_ + 36+, github_pat_ + 36+
	SlackToken                 // xoxa-/xoxb-/xoxp-/xoxr-/xoxs- + 10+
	GoogleAPIKey               // AIza + 35+
	StripeKey                  // sk_live_/rk_live_ + 16+
	OpenAIKey                  // sk- + 20+ with a digit (also sk-proj-, sk-ant-)
	JWT                        // eyJ… . … . …
	PrivateKey                 // -----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----
	BearerToken                // the token after "Bearer "
	numKinds
)

var kindNames = [numKinds]string{
	"aws_access_key_id", "aws_secret_access_key", "github_token", "slack_token", "google_api_key",
	"stripe_key", "openai_key", "jwt", "private_key", "bearer_token",
}

// String returns the kind's name, as used in "[REDACTED:<name>]".
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Counts is how many secrets of each kind were redacted.
type Counts [numKinds]int

// Total is the number of secrets redacted.
func (c *Counts) Total() int {
	n := 0
	for _, x := range c {
		n += x
	}
	return n
}

// AppendReport appends "3 secrets (github_token×2, jwt×1)": kinds and counts, never a value.
func (c *Counts) AppendReport(b []byte) []byte {
	n := c.Total()
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		b = append(b, " secret ("...)
	} else {
		b = append(b, " secrets ("...)
	}
	first := true
	for k, x := range c {
		if x == 0 {
			continue
		}
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = append(b, kindNames[k]...)
		b = append(b, "×"...)
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ')')
}

// Redactor holds the reusable buffers of a scan. The zero value is ready; Counts accumulate
// over calls until Reset. A Redactor is not safe for concurrent use.
type Redactor struct {
	Counts  Counts
	decoded []byte // a JSON string's value, when it holds escapes
	text    []byte // a redacted string value
}

// Reset clears the counts.
func (r *Redactor) Reset() { r.Counts = Counts{} }

// Text appends s with every secret redacted to dst. When s holds none, changed is false
// and out is dst unchanged: nothing is copied.
func (r *Redactor) Text(dst, s []byte) (out []byte, changed bool) {
	return scanText(dst, s, &r.Counts)
}

// ErrMalformed is returned by JSON for input with a string left open.
var ErrMalformed = errors.New("redact: malformed JSON: a string is left open")

// JSON appends src, a JSON text, to dst with every secret inside its string values (and
// keys) redacted; everything else is kept byte for byte, and a string that holds no secret
// keeps its original encoding. A string whose key names an AWS secret access key and whose
// value has that key's shape is redacted whole. The output is valid JSON when src is. When
// nothing was redacted, changed is false and out is dst unchanged. A string left open is
// ErrMalformed; other syntax errors pass through (the host validates the JSON it sends).
func (r *Redactor) JSON(dst, src []byte) (out []byte, changed bool, err error) {
	out = dst
	copied := 0       // src[:copied] is in out (once changed)
	awsValue := false // the previous token was a key naming an AWS secret key
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '"' {
			switch c {
			case ' ', '\t', '\r', '\n', ':':
			default:
				awsValue = false
			}
			continue
		}
		end, escaped := stringEnd(src, i+1)
		if end < 0 {
			return dst, false, ErrMalformed
		}
		raw := src[i+1 : end]
		text := raw
		if escaped {
			r.decoded = unescape(r.decoded[:0], raw)
			text = r.decoded
		}
		isKey := nextIsColon(src, end+1)
		var red []byte
		var did bool
		if !isKey && awsValue && isAWSSecretValue(text) {
			red, did = append(r.text[:0], "[REDACTED:aws_secret_access_key]"...), true
			r.Counts[AWSSecretKey]++
		} else {
			red, did = scanText(r.text[:0], text, &r.Counts)
		}
		awsValue = isKey && isAWSSecretName(text)
		if did {
			r.text = red
			changed = true
			out = append(out, src[copied:i]...)
			out = appendQuoted(out, red)
			copied = end + 1
		}
		i = end
	}
	if !changed {
		return dst, false, nil
	}
	return append(out, src[copied:]...), true, nil
}

// stringEnd returns the index of the quote closing the JSON string whose contents start at
// i, and whether the string holds escapes; -1 if it is left open.
//
// It jumps from quote to quote with bytes.IndexByte (assembly, also in wasm) and looks at
// the bytes between only when a backslash may escape the quote found.
func stringEnd(src []byte, i int) (int, bool) {
	escaped := false
	for i < len(src) {
		q := bytes.IndexByte(src[i:], '"')
		if q < 0 {
			return -1, escaped
		}
		q += i
		b := bytes.IndexByte(src[i:q], '\\')
		if b < 0 {
			return q, escaped
		}
		escaped = true
		// Walk the escapes up to the quote: the quote ends the string unless the last
		// escape before it swallows it.
		j := i + b
		for j < q {
			if src[j] == '\\' {
				j += 2
				continue
			}
			j++
		}
		if j == q {
			return q, true
		}
		i = q + 1 // the quote was escaped
	}
	return -1, escaped
}

func nextIsColon(src []byte, i int) bool {
	for ; i < len(src); i++ {
		switch src[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}

// unescape appends the value of the JSON string contents raw to dst. A lone surrogate
// becomes U+FFFD, as encoding/json does.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			continue
		}
		i++
		switch raw[i] {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			r, n := hex4(raw, i+1)
			if n == 0 {
				dst = append(dst, '\\', 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2, n2 := hex4(raw, i+3); n2 != 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							i += 6
							dst = utf8.AppendRune(dst, d)
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/' and anything else stand for themselves
			dst = append(dst, raw[i])
		}
	}
	return dst
}

func hex4(b []byte, i int) (rune, int) {
	if i+4 > len(b) {
		return 0, 0
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, 0
		}
		r = r<<4 | rune(c)
	}
	return r, 4
}

// appendQuoted appends s as a JSON string: quotes, backslashes and control characters
// escaped, other bytes (UTF-8 included) as they are.
func appendQuoted(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	last := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[last:i]...)
		last = i + 1
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	b = append(b, s[last:]...)
	return append(b, '"')
}

// scanText appends s to dst with every secret replaced, lazily: until the first secret,
// nothing is written.
//
// Every shape but a PEM block starts a word (its first byte is alphanumeric and the one
// before is not), so the scan looks at the first byte of each word, tries a match only when
// that byte can start a secret, and skips the rest of the word in a tight loop.
func scanText(dst, s []byte, counts *Counts) ([]byte, bool) {
	changed := false
	last := 0 // s[:last] is in dst (once changed)
	for i := 0; i < len(s); {
		c := class[s[i]]
		if c&(clAlnum|clTrigger) == 0 {
			i++
			continue
		}
		if c&clTrigger != 0 {
			if start, end, kind, ok := match(s, i); ok {
				changed = true
				dst = append(dst, s[last:start]...)
				dst = append(dst, "[REDACTED:"...)
				dst = append(dst, kindNames[kind]...)
				dst = append(dst, ']')
				counts[kind]++
				last, i = end, end
				continue
			}
		}
		if c&clAlnum == 0 {
			i++
			continue
		}
		i = run(s, i+1, clAlnum)
	}
	if !changed {
		return dst, false
	}
	return append(dst, s[last:]...), true
}

// Byte classes.
const (
	clUpperDigit = 1 << iota // [A-Z0-9]
	clAlnum                  // [A-Za-z0-9]
	clWord                   // [A-Za-z0-9_]
	clB64URL                 // [A-Za-z0-9_-]
	clB64                    // [A-Za-z0-9/+=]
	clToken                  // [A-Za-z0-9._~+/=-] (RFC 6750 b64token)
	clSlack                  // [A-Za-z0-9-]
	clTrigger                // a byte a secret (or an AWS secret key's name) may start with
)

var class = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		upper, lower, digit := c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9'
		alnum := upper || lower || digit
		var m uint8
		if upper || digit {
			m |= clUpperDigit
		}
		if alnum {
			m |= clAlnum | clWord | clB64URL | clB64 | clToken | clSlack
		}
		switch c {
		case '_':
			m |= clWord | clB64URL | clToken
		case '-':
			m |= clB64URL | clToken | clSlack
		case '/', '+', '=':
			m |= clB64 | clToken
		case '.', '~':
			m |= clToken
		}
		switch c {
		case 'A', 'a', 'S', 's', 'g', 'x', 'r', 'e', 'B', 'b', '-':
			m |= clTrigger
		}
		t[c] = m
	}
	return t
}()

// run returns the end of the run of bytes of class cl starting at i.
func run(s []byte, i int, cl uint8) int {
	for i < len(s) && class[s[i]]&cl != 0 {
		i++
	}
	return i
}

// after reports whether s[i-1] (if any) is outside class cl: a token starts at a boundary.
func after(s []byte, i int, cl uint8) bool { return i == 0 || class[s[i-1]]&cl == 0 }

func hasAt(s []byte, i int, p string) bool {
	return len(s)-i >= len(p) && string(s[i:i+len(p)]) == p
}

// match reports a secret at s[i]: the span to replace (which for a named AWS secret key
// starts after the name) and its kind.
func match(s []byte, i int) (start, end int, kind Kind, ok bool) {
	switch s[i] {
	case 'A':
		if (hasAt(s, i, "AKIA") || hasAt(s, i, "ASIA")) && after(s, i, clAlnum) {
			if e := run(s, i+4, clUpperDigit); e-i == 20 && (e == len(s) || class[s[e]]&clAlnum == 0) {
				return i, e, AWSAccessKeyID, true
			}
		}
		if hasAt(s, i, "AIza") && after(s, i, clB64URL) {
			if e := run(s, i+4, clB64URL); e-i >= 39 {
				return i, e, GoogleAPIKey, true
			}
		}
	case 'g':
		if len(s)-i >= 4 && s[i+1] == 'h' && s[i+3] == '_' && after(s, i, clWord) {
			switch s[i+2] {
			case 'p', 'o', 'u', 's', 'r':
				if e := run(s, i+4, clAlnum); e-i-4 >= 36 {
					return i, e, GitHubToken, true
				}
			}
		}
		if hasAt(s, i, "github_pat_") && after(s, i, clWord) {
			if e := run(s, i+11, clWord); e-i-11 >= 36 {
				return i, e, GitHubToken, true
			}
		}
	case 'x':
		if len(s)-i >= 5 && s[i+1] == 'o' && s[i+2] == 'x' && s[i+4] == '-' && after(s, i, clAlnum) {
			switch s[i+3] {
			case 'a', 'b', 'p', 'r', 's':
				if e := run(s, i+5, clSlack); e-i-5 >= 10 {
					return i, e, SlackToken, true
				}
			}
		}
	case 's', 'r':
		if len(s)-i >= 8 && s[i+1] == 'k' && after(s, i, clAlnum) {
			if hasAt(s, i+2, "_live_") {
				if e := run(s, i+8, clAlnum); e-i-8 >= 16 {
					return i, e, StripeKey, true
				}
			}
			if s[i] == 's' && s[i+2] == '-' {
				if e := run(s, i+3, clB64URL); e-i-3 >= 20 && hasDigit(s[i+3:e]) {
					return i, e, OpenAIKey, true
				}
			}
		}
	case 'e':
		if hasAt(s, i, "eyJ") && after(s, i, clB64URL) {
			if e, ok := jwtEnd(s, i); ok {
				return i, e, JWT, true
			}
		}
	case '-':
		if hasAt(s, i, "-----BEGIN ") {
			if e, ok := pemEnd(s, i); ok {
				return i, e, PrivateKey, true
			}
		}
	case 'B', 'b':
		if eqFold(s, i, "bearer") && after(s, i, clAlnum) {
			if st, e, ok := bearerToken(s, i); ok {
				return st, e, BearerToken, true
			}
		}
	}
	// An AWS secret access key named in the text: aws_secret_access_key=..., AWS_SECRET_KEY: ...,
	// "secretAccessKey": "...".
	if c := s[i] | 0x20; (c == 's' || c == 'a') && after(s, i, clAlnum) {
		if n := awsNameLen(s, i); n > 0 {
			if st, e, ok := namedAWSSecret(s, i+n); ok {
				return st, e, AWSSecretKey, true
			}
		}
	}
	return 0, 0, 0, false
}

func hasDigit(b []byte) bool {
	for _, c := range b {
		if c >= '0' && c <= '9' {
			return true
		}
	}
	return false
}

// jwtEnd returns the end of a JWT starting at s[i] ("eyJ"): a header of 10+ base64url bytes,
// a dot, a payload of 2+, a dot and a signature (possibly empty, for alg "none").
func jwtEnd(s []byte, i int) (int, bool) {
	h := run(s, i, clB64URL)
	if h-i < 10 || h >= len(s) || s[h] != '.' {
		return 0, false
	}
	p := run(s, h+1, clB64URL)
	if p-h-1 < 2 || p >= len(s) || s[p] != '.' {
		return 0, false
	}
	return run(s, p+1, clB64URL), true
}

// pemEnd returns the end of a PEM private key block starting at s[i] ("-----BEGIN "): the
// END line's end, or the end of s when the block is cut off (what is there is still key).
func pemEnd(s []byte, i int) (int, bool) {
	j := i + len("-----BEGIN ")
	// The label: [A-Z0-9 ]* then "PRIVATE KEY-----" ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", …).
	for k := j; k < len(s) && k-j <= 40; k++ {
		if hasAt(s, k, "PRIVATE KEY-----") {
			body := k + len("PRIVATE KEY-----")
			e := bytes.Index(s[body:], []byte("-----END "))
			if e < 0 {
				return len(s), true
			}
			e += body + len("-----END ")
			if t := bytes.Index(s[e:], []byte("PRIVATE KEY-----")); t >= 0 && t <= 40 {
				return e + t + len("PRIVATE KEY-----"), true
			}
			return len(s), true
		}
		if c := s[k]; c != ' ' && class[c]&clUpperDigit == 0 {
			return 0, false
		}
	}
	return 0, false
}

// bearerToken finds the token after "Bearer" at s[i]: one or more blanks, then a b64token.
// After "Authorization:" any length counts; elsewhere 16 bytes or more, so that prose
// ("a bearer token is …") stays.
func bearerToken(s []byte, i int) (int, int, bool) {
	j := i + len("bearer")
	k := j
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k == j {
		return 0, 0, false
	}
	e := run(s, k, clToken)
	min := 16
	if authorizationBefore(s, i) {
		min = 1
	}
	if e-k < min {
		return 0, 0, false
	}
	return k, e, true
}

// authorizationBefore reports whether "Authorization" followed by separators (`: `, `=`,
// `": "`) ends at s[i].
func authorizationBefore(s []byte, i int) bool {
	j := i
	for j > 0 && i-j < 8 {
		switch s[j-1] {
		case ' ', '\t', ':', '=', '"', '\'':
			j--
			continue
		}
		break
	}
	const word = "authorization"
	return j >= len(word) && j < i && eqFold(s, j-len(word), word)
}

// eqFold reports whether s[i:] starts with the lower-case ASCII word w, ignoring case.
func eqFold(s []byte, i int, w string) bool {
	if len(s)-i < len(w) {
		return false
	}
	for k := 0; k < len(w); k++ {
		if s[i+k]|0x20 != w[k] {
			return false
		}
	}
	return true
}

// awsNameLen returns the length of an AWS secret key name at s[i] — "secret_access_key" or
// "aws_secret_key", with or without an "aws" prefix, in any case, with "_", "-", "." or
// nothing between the words — or 0.
func awsNameLen(s []byte, i int) int {
	for _, name := range [...]string{"awssecretaccesskey", "secretaccesskey", "awssecretkey"} {
		if n := matchName(s, i, name); n > 0 {
			return n
		}
	}
	return 0
}

// matchName matches the lower-case letters of name at s[i], allowing one separator ("_",
// "-", ".") between letters; it returns the length matched or 0. The name must not run on
// into more letters.
func matchName(s []byte, i int, name string) int {
	j := i
	for k := 0; k < len(name); k++ {
		if k > 0 && j < len(s) && (s[j] == '_' || s[j] == '-' || s[j] == '.') {
			j++
		}
		if j >= len(s) || s[j]|0x20 != name[k] {
			return 0
		}
		j++
	}
	if j < len(s) && class[s[j]]&clAlnum != 0 {
		return 0
	}
	return j - i
}

// namedAWSSecret finds the value after an AWS secret key name ending at s[i]: closing quotes,
// blanks, "=" or ":", blanks, an opening quote, then 40 [A-Za-z0-9/+=] not followed by more.
func namedAWSSecret(s []byte, i int) (int, int, bool) {
	j := i
	for j < len(s) && (s[j] == '"' || s[j] == '\'') {
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) || (s[j] != '=' && s[j] != ':') {
		return 0, 0, false
	}
	j++
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '"' || s[j] == '\'') {
		j++
	}
	e := run(s, j, clB64)
	if e-j != 40 {
		return 0, 0, false
	}
	return j, e, true
}

// isAWSSecretName reports whether a JSON key names an AWS secret access key.
func isAWSSecretName(key []byte) bool {
	for i := range key {
		if c := key[i] | 0x20; (c == 's' || c == 'a') && after(key, i, clAlnum) {
			if n := awsNameLen(key, i); n > 0 && i+n == len(key) {
				return true
			}
		}
	}
	return false
}

// isAWSSecretValue reports whether a JSON string value is, blanks aside, 40 [A-Za-z0-9/+=].
func isAWSSecretValue(v []byte) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 40 && run(v, 0, clB64) == 40
}
