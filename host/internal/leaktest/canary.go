package leaktest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Errors of the scan.
var (
	// ErrSourceTooLarge: a file source over maxSourceBytes.
	ErrSourceTooLarge = errors.New("source exceeds the scan limit")
	// ErrNilSource: a Source built without a reader.
	ErrNilSource = errors.New("source has nothing to read")
)

// maxSourceBytes caps one file read by FileSource.
const maxSourceBytes = 256 << 20

// excerptBytes is how much context a finding shows on each side of the canary.
const excerptBytes = 60

// validName is what a canary name must look like: an environment variable name.
var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Canary is one secret stand-in: Name is the environment variable it is set as, Value a
// random string that cannot occur by chance.
type Canary struct {
	Name  string
	Value string
}

// Canaries are the canaries of one test. The zero value has none.
type Canaries struct {
	list []Canary
}

// NewCanaries makes one canary per name, valued "CANARY-<name>-<32 hex digits>". Names
// must be environment variable names and distinct.
func NewCanaries(t testing.TB, names ...string) Canaries {
	t.Helper()
	var c Canaries
	seen := map[string]bool{}
	for _, n := range names {
		if !validName.MatchString(n) || seen[n] {
			t.Fatalf("leaktest: canary name %q is not a distinct environment variable name", n)
		}
		seen[n] = true
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		c.list = append(c.list, Canary{Name: n, Value: "CANARY-" + n + "-" + hex.EncodeToString(b[:])})
	}
	return c
}

// All returns the canaries in the order they were named.
func (c Canaries) All() []Canary { return append([]Canary(nil), c.list...) }

// Only returns the canaries called names (unknown names are ignored), to scan a source
// that may legitimately carry the others.
func (c Canaries) Only(names ...string) Canaries {
	var out Canaries
	for _, k := range c.list {
		for _, n := range names {
			if k.Name == n {
				out.list = append(out.list, k)
				break
			}
		}
	}
	return out
}

// Names returns the canaries' names.
func (c Canaries) Names() []string {
	out := make([]string, len(c.list))
	for i, k := range c.list {
		out[i] = k.Name
	}
	return out
}

// Value is the value of the canary called name ("" if there is none).
func (c Canaries) Value(name string) string {
	for _, k := range c.list {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// Values returns every canary value.
func (c Canaries) Values() []string {
	out := make([]string, len(c.list))
	for i, k := range c.list {
		out[i] = k.Value
	}
	return out
}

// Env returns NAME=value for every canary, to append to a child's environment.
func (c Canaries) Env() []string {
	out := make([]string, len(c.list))
	for i, k := range c.list {
		out[i] = k.Name + "=" + k.Value
	}
	return out
}

// Setenv sets every canary in the test process's environment (t.Setenv: restored at the
// end of the test, and the test may not be parallel).
func (c Canaries) Setenv(t testing.TB) {
	t.Helper()
	for _, k := range c.list {
		t.Setenv(k.Name, k.Value)
	}
}

// Redact replaces every canary in s, in every form the scan recognises, with
// [CANARY:<name>].
func (c Canaries) Redact(s string) string {
	type rep struct{ pat, name string }
	var reps []rep
	for _, k := range c.list {
		for _, f := range forms(k.Value) {
			reps = append(reps, rep{f.pattern, k.Name})
		}
	}
	// Longest first, so that no shorter pattern splits a longer one.
	sort.SliceStable(reps, func(i, j int) bool { return len(reps[i].pat) > len(reps[j].pat) })
	for _, r := range reps {
		s = strings.ReplaceAll(s, r.pat, "[CANARY:"+r.name+"]")
	}
	return s
}

// form is one way a canary can appear in a blob.
type form struct {
	kind    string // "raw", "base64", "hex"
	pattern string
}

// forms lists the patterns that betray value: the value itself; its hex (either case);
// and, for base64 (standard and URL alphabets), the part of the encoding that does not
// depend on the surrounding bytes, for each of the three alignments the value can have
// in the encoded data — so a canary inside an http/body or process/output chunk, or any
// other base64 blob, is found too.
func forms(value string) []form {
	out := []form{{"raw", value}}
	h := hex.EncodeToString([]byte(value))
	out = append(out, form{"hex", h}, form{"hex", strings.ToUpper(h)})
	for k := range 3 {
		data := append(make([]byte, k), value...)
		enc := base64.StdEncoding.EncodeToString(data)
		start := 0
		if k > 0 {
			start = 4 // the first group mixes in the bytes before the value
		}
		end := len(data) / 3 * 4 // a trailing partial group mixes in the bytes after it
		if end-start < 16 {
			continue
		}
		core := enc[start:end]
		out = append(out, form{"base64", core}, form{"base64", strings.NewReplacer("+", "-", "/", "_").Replace(core)})
	}
	// A pattern listed twice would be counted twice.
	seen := map[string]bool{}
	uniq := out[:0]
	for _, f := range out {
		if !seen[f.pattern] {
			seen[f.pattern] = true
			uniq = append(uniq, f)
		}
	}
	return uniq
}

// Source is a named blob to scan, read when the scan runs (so a source over a log file or
// a live proxy sees everything written up to then).
type Source struct {
	Name string
	read func() (string, error)
}

// TextSource scans a string (status output, an error text).
func TextSource(name, text string) Source {
	return Source{Name: name, read: func() (string, error) { return text, nil }}
}

// ErrorSource scans err's text ("" for nil).
func ErrorSource(name string, err error) Source {
	return Source{Name: name, read: func() (string, error) {
		if err == nil {
			return "", nil
		}
		return err.Error(), nil
	}}
}

// BufferSource scans s.String() at scan time: a *bytes.Buffer, a *strings.Builder, a
// *Buffer. A bytes.Buffer still being written (a child's stderr) races with the scan:
// use a *Buffer for those.
func BufferSource(name string, s fmt.Stringer) Source {
	return Source{Name: name, read: func() (string, error) { return s.String(), nil }}
}

// FileSource scans a file (a log, the decision log). A file that cannot be read fails
// the assertion: an unread log proves nothing.
func FileSource(name, path string) Source {
	return Source{Name: name, read: func() (string, error) {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("leaktest: source %s: %w", name, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
		if err != nil {
			return "", fmt.Errorf("leaktest: source %s: read %s: %w", name, path, err)
		}
		if len(b) > maxSourceBytes {
			return "", fmt.Errorf("leaktest: source %s: %s: %w (%d bytes)", name, path, ErrSourceTooLarge, maxSourceBytes)
		}
		return string(b), nil
	}}
}

// FramesSource scans every frame a Proxy recorded, as received and as forwarded.
func FramesSource(p *Proxy) Source {
	return Source{Name: "proxy frames", read: func() (string, error) {
		var b strings.Builder
		for _, f := range p.Frames() {
			fmt.Fprintf(&b, "#%d %s %s\n", f.Conn, f.Dir, f.Text)
			if f.Forwarded != f.Text && f.Forwarded != "" {
				fmt.Fprintf(&b, "#%d %s (forwarded) %s\n", f.Conn, f.Dir, f.Forwarded)
			}
		}
		return b.String(), nil
	}}
}

// RequestsSource scans every request a RecordingServer recorded: method, path, query,
// every header and the recorded body.
func RequestsSource(s *RecordingServer) Source {
	return Source{Name: "upstream requests to " + s.BaseURL(), read: func() (string, error) {
		var b strings.Builder
		for _, r := range s.Requests() {
			fmt.Fprintf(&b, "%s %s?%s\n", r.Method, r.Path, r.RawQuery)
			keys := make([]string, 0, len(r.Header))
			for k := range r.Header {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				for _, v := range r.Header[k] {
					fmt.Fprintf(&b, "%s: %s\n", k, v)
				}
			}
			b.Write(r.Body)
			b.WriteString("\n")
		}
		return b.String(), nil
	}}
}

// Finding is one canary found in one source.
type Finding struct {
	Canary string   // the canary's name, never its value
	Source string   // the source's name
	Count  int      // occurrences, every form together
	Forms  []string // which forms were seen: "raw", "base64", "hex"
	// Excerpt is the text around the first occurrence with every canary redacted.
	Excerpt string
}

func (f Finding) String() string {
	return fmt.Sprintf("canary %s found in %s: %d occurrence(s) (%s), e.g. %q",
		f.Canary, f.Source, f.Count, strings.Join(f.Forms, ", "), f.Excerpt)
}

// Scan looks for every canary in every source. It returns the findings, in source then
// canary order, and the read errors of sources it could not scan (joined).
func Scan(c Canaries, sources ...Source) ([]Finding, error) {
	findings, errs := scan(c, sources)
	return findings, errors.Join(errs...)
}

func scan(c Canaries, sources []Source) (findings []Finding, errs []error) {
	for _, src := range sources {
		if src.read == nil {
			errs = append(errs, fmt.Errorf("leaktest: source %q: %w", src.Name, ErrNilSource))
			continue
		}
		text, err := src.read()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var redacted string
		for _, k := range c.list {
			f := Finding{Canary: k.Name, Source: src.Name}
			seenKinds := map[string]bool{}
			for _, fm := range forms(k.Value) {
				n := strings.Count(text, fm.pattern)
				if n == 0 {
					continue
				}
				f.Count += n
				if !seenKinds[fm.kind] {
					seenKinds[fm.kind] = true
					f.Forms = append(f.Forms, fm.kind)
				}
			}
			if f.Count == 0 {
				continue
			}
			if redacted == "" {
				redacted = c.Redact(text)
			}
			f.Excerpt = excerpt(redacted, "[CANARY:"+k.Name+"]")
			findings = append(findings, f)
		}
	}
	return findings, errs
}

// excerpt is the text around the first marker in an already redacted text.
func excerpt(redacted, marker string) string {
	i := strings.Index(redacted, marker)
	if i < 0 {
		return marker
	}
	start, end := max(0, i-excerptBytes), min(len(redacted), i+len(marker)+excerptBytes)
	return redacted[start:end]
}

// TB is what AssertNoCanary needs of a test: *testing.T and *testing.B satisfy it.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// AssertNoCanary fails t once per canary found in a source, and once per source that
// could not be read. Messages name the canary and the source and show a redacted
// excerpt; they never contain a canary's value. It reports whether everything was clean.
func AssertNoCanary(t TB, c Canaries, sources ...Source) bool {
	t.Helper()
	findings, errs := scan(c, sources)
	for _, f := range findings {
		t.Errorf("leaktest: %s", f)
	}
	for _, err := range errs {
		// A read error could quote a path or text holding a canary: redact it too.
		t.Errorf("leaktest: not scanned: %s", c.Redact(err.Error()))
	}
	return len(findings) == 0 && len(errs) == 0
}

// Count is the number of canary occurrences in the sources, every canary and form
// together, or -1 if a source could not be read.
func Count(c Canaries, sources ...Source) int {
	findings, err := Scan(c, sources...)
	if err != nil {
		return -1
	}
	n := 0
	for _, f := range findings {
		n += f.Count
	}
	return n
}
