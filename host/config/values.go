package config

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// tableReader reads the keys of one TOML table with typed accessors. Each accessor reports a
// precise error (naming the key, its line, the expected and the actual type) and returns
// ok=false when the key is absent or invalid; has tells the two apart.
type tableReader struct {
	d    *tomlDoc
	c    *collector
	path []string // the table's key path, for file ordering
	base Error    // Line (the table's line), Table, Server, Environment of every error
	m    map[string]toml.Primitive
	// elemLines, when non-nil, holds key lines found by arrayHeaderLines: the table is an
	// element of an array of tables, for which the library's key positions are ambiguous.
	elemLines map[string]int
	nerr      int // errors reported through this reader
}

func (r *tableReader) has(k string) bool {
	_, ok := r.m[k]
	return ok
}

// keyLine returns the line of key k, falling back to the table's line.
func (r *tableReader) keyLine(k string) int {
	if r.elemLines != nil {
		if l, ok := r.elemLines[k]; ok {
			return l
		}
		return r.base.Line
	}
	if p, ok := r.m[k]; ok {
		path := make([]string, 0, len(r.path)+1)
		if l := r.d.lineAt(append(append(path, r.path...), k), p); l > 0 {
			return l
		}
	}
	return r.base.Line
}

// errf reports a problem with key k (the table as a whole when k is "").
func (r *tableReader) errf(k, format string, args ...any) {
	r.nerr++
	if r.c.full() { // skip the position lookup, which costs a pass over the file
		r.c.dropped++
		return
	}
	e := r.base
	if k != "" {
		e.Line = r.keyLine(k)
	}
	e.Key = k
	r.c.add(e, format, args...)
}

// errKeyf reports a problem with part sub (e.g. "[2]", ".NAME") of key k, at k's line.
func (r *tableReader) errKeyf(k, sub string, format string, args ...any) {
	r.nerr++
	if r.c.full() {
		r.c.dropped++
		return
	}
	e := r.base
	e.Line = r.keyLine(k)
	e.Key = k + sub
	r.c.add(e, format, args...)
}

func (r *tableReader) raw(k string) (any, bool) {
	p, ok := r.m[k]
	if !ok {
		return nil, false
	}
	return r.d.value(p), true
}

// keys returns the table's keys in file order.
func (r *tableReader) keys() []string { return r.d.sortedKeys(r.path, r.m) }

// checkKeys reports every key not in accepted (in file order), suggesting the closest key of
// suggestFrom; hints maps a common wrong key to advice.
func (r *tableReader) checkKeys(accepted, suggestFrom []string, hints map[string]string) {
	for _, k := range r.keys() {
		if contains(accepted, k) {
			continue
		}
		if h, ok := hints[k]; ok {
			r.errf(k, "unknown key `%s`: %s", k, h)
			continue
		}
		if s := suggest(k, suggestFrom); s != "" {
			r.errf(k, "unknown key `%s` (did you mean `%s`?)", k, s)
			continue
		}
		r.errf(k, "unknown key `%s`", k)
	}
}

func (r *tableReader) str(k string) (string, bool) {
	v, ok := r.raw(k)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		r.errf(k, "`%s` must be a string, got %s", k, typeName(v))
		return "", false
	}
	return s, true
}

// nonEmpty is str that also rejects "".
func (r *tableReader) nonEmpty(k string) (string, bool) {
	s, ok := r.str(k)
	if ok && strings.TrimSpace(s) == "" {
		r.errf(k, "`%s` must not be empty", k)
		return "", false
	}
	return s, ok
}

func (r *tableReader) boolean(k string) (bool, bool) {
	v, ok := r.raw(k)
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.errf(k, "`%s` must be true or false, got %s", k, typeName(v))
		return false, false
	}
	return b, true
}

func (r *tableReader) integer(k string) (int64, bool) {
	v, ok := r.raw(k)
	if !ok {
		return 0, false
	}
	n, isInt := v.(int64)
	if !isInt {
		r.errf(k, "`%s` must be an integer, got %s", k, typeName(v))
		return 0, false
	}
	return n, true
}

// strSlice reads an array of strings; an empty string item is an error when nonEmptyItems.
func (r *tableReader) strSlice(k string, nonEmptyItems bool) ([]string, bool) {
	v, ok := r.raw(k)
	if !ok {
		return nil, false
	}
	return r.strSliceValue(k, "", v, nonEmptyItems)
}

func (r *tableReader) strSliceValue(k, sub string, v any, nonEmptyItems bool) ([]string, bool) {
	arr, isArr := v.([]any)
	if !isArr {
		r.errKeyf(k, sub, "`%s%s` must be an array of strings, got %s", k, sub, typeName(v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	good := true
	for i, e := range arr {
		s, isStr := e.(string)
		switch {
		case !isStr:
			r.errKeyf(k, fmt.Sprintf("%s[%d]", sub, i), "`%s%s[%d]` must be a string, got %s", k, sub, i, typeName(e))
			good = false
		case nonEmptyItems && s == "":
			r.errKeyf(k, fmt.Sprintf("%s[%d]", sub, i), "`%s%s[%d]` must not be empty", k, sub, i)
			good = false
		}
		out = append(out, s)
	}
	return out, good
}

// strMap reads a table of strings; check, if non-nil, validates each name and value and
// returns a problem or "".
func (r *tableReader) strMap(k string, check func(name, value string) string) (map[string]string, bool) {
	v, ok := r.raw(k)
	if !ok {
		return nil, false
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.errf(k, "`%s` must be a table of strings, got %s", k, typeName(v))
		return nil, false
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]string, len(m))
	good := true
	for _, n := range names {
		sub := "." + quoteKey(n)
		s, isStr := m[n].(string)
		if !isStr {
			r.errKeyf(k, sub, "`%s%s` must be a string, got %s", k, sub, typeName(m[n]))
			good = false
			continue
		}
		if check != nil {
			if p := check(n, s); p != "" {
				r.errKeyf(k, sub, "`%s%s` %s", k, sub, p)
				good = false
				continue
			}
		}
		out[n] = s
	}
	return out, good
}

// seconds reads a duration given in (integer or float) seconds.
func (r *tableReader) seconds(k string) (time.Duration, bool) {
	v, ok := r.raw(k)
	if !ok {
		return 0, false
	}
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		r.errf(k, "`%s` must be a number of seconds, got %s", k, typeName(v))
		return 0, false
	}
	return r.duration(k, f, time.Second)
}

// millis reads a duration given in integer milliseconds.
func (r *tableReader) millis(k string) (time.Duration, bool) {
	v, ok := r.raw(k)
	if !ok {
		return 0, false
	}
	n, isInt := v.(int64)
	if !isInt {
		r.errf(k, "`%s` must be an integer number of milliseconds, got %s", k, typeName(v))
		return 0, false
	}
	return r.duration(k, float64(n), time.Millisecond)
}

// maxTimeout bounds the server timeouts: anything longer is a typo.
const maxTimeout = 24 * time.Hour

func (r *tableReader) duration(k string, f float64, unit time.Duration) (time.Duration, bool) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		r.errf(k, "`%s` must be a finite number, got %v", k, f)
		return 0, false
	case f <= 0:
		r.errf(k, "`%s` must be greater than 0, got %v", k, f)
		return 0, false
	case f > float64(maxTimeout/unit):
		r.errf(k, "`%s` must be at most %v (%v), got %v", k, int64(maxTimeout/unit), maxTimeout, f)
		return 0, false
	}
	d := time.Duration(f * float64(unit))
	if d <= 0 {
		r.errf(k, "`%s` must be at least 1ns, got %v", k, f)
		return 0, false
	}
	return d, true
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// suggest returns the known key closest to k when it is close enough to be a typo.
func suggest(k string, known []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range known {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(k) <= 3 {
		limit = 1
	}
	if bestD <= limit {
		return best
	}
	if len(k) >= 3 {
		for _, c := range known {
			if strings.HasPrefix(c, k) {
				return c
			}
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, by bytes; keys are ASCII.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt // not a typo of any key we know
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// envVarNameProblem checks an environment variable name.
func envVarNameProblem(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case strings.ContainsAny(name, "=\x00"):
		return fmt.Sprintf("%q is not a valid environment variable name (it contains '=' or NUL)", name)
	}
	return ""
}

// headerNameProblem checks an HTTP header field name (an RFC 9110 token).
func headerNameProblem(name string) string {
	if name == "" {
		return "is an empty header name"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return fmt.Sprintf("is not a valid HTTP header name (%q)", name)
	}
	return ""
}

// headerValueProblem checks a literal header value.
func headerValueProblem(v string) string {
	if strings.ContainsAny(v, "\r\n\x00") {
		return "contains a line break or NUL, which is not allowed in an HTTP header value"
	}
	return ""
}
