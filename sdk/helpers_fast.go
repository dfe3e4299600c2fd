package sdk

import (
	"math/bits"
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

// Loop-free versions of URLHost and HostIn for wasm guests. They were
// written when a loop iteration cost an interrupt check of about 25 ns
// (wazero's), so scanning a 40-byte URL byte by byte cost a microsecond;
// with warden's own checks (a few instructions) they are still about twice
// as fast as the loops in the guest (ten HostIn calls: 0.8 µs against
// 1.4 µs). They look at 8 bytes at a
// time in straight-line code ("SWAR": SIMD within a register) and handle the
// common sizes only, reporting ok == false for the rest, which then go
// through the plain versions. They are compiled everywhere (the tests run
// them natively against the plain versions); URLHost and HostIn use them
// only in wasm builds (fastHelpers), HostSet.Match in every build, since
// it is the faster one natively too.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
)

// eq returns, for each byte of w equal to c, 0x80 in that byte (0 in the
// others). Exact: no borrow crosses bytes.
func eq(w uint64, c byte) uint64 {
	t := w ^ ones*uint64(c)
	return ^((t&lows + lows) | t) & highs
}

// gather turns the 0x80-per-byte mask m into 8 bits: bit j set iff byte j
// of m is 0x80.
func gather(m uint64) uint64 { return (m >> 7) * 0x0102040810204080 >> 56 }

// lower lowercases the ASCII letters of the 8 bytes in w.
func lower(w uint64) uint64 {
	l := w & lows
	upper := (l + ones*(0x80-'A')) &^ (l + ones*(0x80-'Z'-1)) &^ w & highs
	return w | upper>>2
}

// bitmaps returns the URL-delimiter bitmaps of the 64 bytes in w0..w7 (bit
// i for byte i): ':', '/', any of "/?#\\" and '@'. It is one call with
// no branch (so no interrupt check), its arguments words, not a pointer
// (a nil check is a branch).
func bitmaps(w0, w1, w2, w3, w4, w5, w6, w7 uint64) (colon, slash, delim, at uint64) {
	// Written out, not looped: a loop costs an interrupt check per iteration.
	// (No array either: zeroing one is a memory.fill, which wazero runs as
	// a loop of memmove calls.)
	c := func(w uint64) (uint64, uint64, uint64, uint64) {
		s := eq(w, '/')
		return gather(eq(w, ':')), gather(s), gather(s | eq(w, '?') | eq(w, '#') | eq(w, '\\')), gather(eq(w, '@'))
	}
	c0, s0, d0, a0 := c(w0)
	c1, s1, d1, a1 := c(w1)
	c2, s2, d2, a2 := c(w2)
	c3, s3, d3, a3 := c(w3)
	c4, s4, d4, a4 := c(w4)
	c5, s5, d5, a5 := c(w5)
	c6, s6, d6, a6 := c(w6)
	c7, s7, d7, a7 := c(w7)
	colon = c0 | c1<<8 | c2<<16 | c3<<24 | c4<<32 | c5<<40 | c6<<48 | c7<<56
	slash = s0 | s1<<8 | s2<<16 | s3<<24 | s4<<32 | s5<<40 | s6<<48 | s7<<56
	delim = d0 | d1<<8 | d2<<16 | d3<<24 | d4<<32 | d5<<40 | d6<<48 | d7<<56
	at = a0 | a1<<8 | a2<<16 | a3<<24 | a4<<32 | a5<<40 | a6<<48 | a7<<56
	return
}

// word returns bytes p..p+7 of s (8 <= len(s) == n <= 64, p a multiple of
// 8 below 64) as a little-endian word, with zeros for the bytes past the
// end of s, reading only inside s: the word itself when it fits, else the
// last 8 bytes of s shifted down by the d bytes that are past the end (a
// shift of 64 or more gives 0). It must inline: a call would cost an
// interrupt check.
func word(s string, n, p int) uint64 {
	d := p + 8 - n
	d &^= d >> 63 // max(d, 0)
	return load64(s[p-d:]) >> uint(8*d)
}

// urlHostFast is URLHost: for a URL of 8 to 64 bytes it builds bitmaps of
// the delimiters (bit i = byte i) and finds the pieces with bit
// operations; other lengths, and an IPv6 literal, go to abi.URLHost.
func urlHostFast(raw string) string {
	n := len(raw)
	if n < 8 || n > 64 {
		return abi.URLHost(raw)
	}
	// The URL as eight words, zeros past its end (they match no delimiter).
	colon, slash, delim, at := bitmaps(word(raw, n, 0), word(raw, n, 8), word(raw, n, 16), word(raw, n, 24),
		word(raw, n, 32), word(raw, n, 40), word(raw, n, 48), word(raw, n, 56))
	n64 := uint64(n)

	// The scheme separator: the first i with ':' at i and '/' at i+1, i+2;
	// else a leading "//"; else the authority starts at 0.
	sep := colon & (slash >> 1) & (slash >> 2)
	start := sel(2*b2u(slash&3 == 3), uint64(bits.TrailingZeros64(sep))+3, sep != 0)
	// The authority ends at the first of "/?#\\" from start, or at n.
	from := ^uint64(0) << start // (start <= 66: a shift of 64 or more gives 0)
	end := min64(uint64(bits.TrailingZeros64(delim&from)), n64)
	below := uint64(1)<<end - 1 // (end == 64: 0 - 1, all bits)
	// The host follows the last '@' of the authority.
	a := at & from & below
	hs := sel(start, 64-uint64(bits.LeadingZeros64(a)), a != 0)
	host := ^uint64(0) << hs & below
	c := colon & host
	he := sel(end, uint64(bits.TrailingZeros64(c)), c != 0)
	if b2u(raw[min64i(int(hs), n-1)] == '[')&b2u(hs < end) != 0 {
		return abi.URLHost(raw) // an IPv6 literal: rare
	}
	return raw[hs:he]
}

// sel returns b if c, else a, in arithmetic.
func sel(a, b uint64, c bool) uint64 { return a ^ (a^b)&-b2u(c) }

// min64 is min(a, b) in arithmetic (the builtin min is a branch on wasm).
func min64(a, b uint64) uint64 { return sel(a, b, b < a) }

// hostInFast is HostIn. When the host has 8 bytes or more (after its
// trailing dot) and every pattern's compared part ("suffix" of "*.suffix",
// or the exact host) has 8 to 16 bytes, the last 16 bytes of the host and
// of each pattern are compared as two lowercased words, under a mask for
// the pattern's length, four patterns per step without a loop; anything
// else goes to hostInSlow.
//
// The prepared form of the last list of up to four patterns is cached
// (patterns): a policy passes the same list for every server, and preparing
// a pattern costs more than comparing it.
func hostInFast(host string, allowed []string) bool {
	n := len(host)
	if n == 0 {
		return false
	}
	n -= int(b2u(host[n-1] == '.'))
	np := len(allowed)
	if b2u(n < 8)|b2u(np == 0) != 0 {
		return hostInSlow(host, allowed)
	}
	hi, lo := tail16(host[:n])
	hi, lo = lower(hi), lower(lo)
	// The first four patterns, the last one repeated when there are fewer
	// (a repeated pattern matches what it matches once).
	k := np - 1
	p0, p1, p2, p3 := elem(allowed, 0), elem(allowed, min64i(1, k)), elem(allowed, min64i(2, k)), elem(allowed, min64i(3, k))
	c := &patterns
	hit := c.valid & same(p0, c.p[0]) & same(p1, c.p[1]) & same(p2, c.p[2]) & same(p3, c.p[3])
	m := uint64(n)
	if b2u(k < 4)&hit != 0 { // (the fast path in the then-branch: it falls through)
		return c.l[0].match(m, hi, lo)|c.l[1].match(m, hi, lo)|c.l[2].match(m, hi, lo)|c.l[3].match(m, hi, lo) != 0
	}
	return hostInRest(host, allowed, hi, lo, m, hit, p0, p1, p2, p3)
}

// elem returns s[i] without a bounds check (0 <= i < len(s)).
func elem(s []string, i int) string {
	return *(*string)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), uintptr(i)*unsafe.Sizeof("")))
}

// same reports (1 or 0) whether strings a and b are the same string: the
// same bytes in memory, which for Go strings (immutable) means the same
// contents.
func same(a, b string) uint64 {
	return b2u(unsafe.StringData(a) == unsafe.StringData(b)) & b2u(len(a) == len(b))
}

// patternCache holds the prepared form of a list of up to four patterns.
// It keeps the strings themselves (p), so that their memory cannot be
// reused for other strings while they are cached: a string compared equal
// to p[i] by same is p[i]. Views of the hook input are not cached: their
// bytes change with the next input.
type patternCache struct {
	p     [4]string
	l     [4]lane
	valid uint64 // 1 when p and l are the cached list, 0 when there is none
}

// patterns is the cache of hostInFast (a wasm instance runs one call at a
// time; native builds do not use it).
var patterns patternCache

// lane is a pattern prepared for hostInFast: the last 16 bytes of its
// compared part, lowercased, as two words (phi, plo) with the mask of plo's
// bytes that are the part's (mlo), and the host lengths it can match: min
// to min+span (an exact pattern: its own length; "*.suffix": longer than
// ".suffix"; none for an empty pattern or one like "*suffix").
type lane struct {
	phi, plo, mlo uint64
	min, span     uint64
}

// noLane is a lane that matches nothing (no host length n has n-min <= 0).
var noLane = lane{min: ^uint64(0)}

// prepare fills c.l with patterns p0..p3 and reports whether they are all
// usable (their compared parts 8 to 16 bytes long, or empty). It caches them
// (c.p, c.valid) unless one of them is a view of the hook input, whose
// bytes change with the next input.
func (c *patternCache) prepare(p0, p1, p2, p3 string) bool {
	l := [4]lane{noLane, noLane, noLane, noLane}
	ok := true
	for i, p := range [4]string{p0, p1, p2, p3} {
		if l[i], ok = prepareLane(p); !ok {
			break
		}
	}
	c.p, c.l, c.valid = [4]string{}, l, 0
	if ok && !inputView(p0) && !inputView(p1) && !inputView(p2) && !inputView(p3) {
		c.p, c.valid = [4]string{p0, p1, p2, p3}, 1
	}
	return ok
}

// prepareLane prepares pattern p, reporting false if its compared part is
// not 8 to 16 bytes long (an empty pattern, or one like "*suffix", is a
// lane that matches nothing).
func prepareLane(p string) (lane, bool) {
	if len(p) == 0 {
		return noLane, true
	}
	e := len(p) - int(b2u(p[len(p)-1] == '.'))
	w := int(b2u(p[0] == '*'))
	s := p[w:max(e, w)]
	if len(s) < 8 || len(s) > 16 {
		return noLane, false
	}
	phi, plo := tail16(s)
	l := lane{phi: lower(phi), plo: lower(plo), mlo: ^uint64(0) << uint(8*(16-len(s))), min: uint64(len(s))}
	if w == 1 {
		l.min, l.span = uint64(len(s))+1, 1<<62
		if s[0] != '.' {
			l = noLane // "*suffix" matches nothing
		}
	}
	return l, true
}

// prepareLanes prepares patterns for HostSet.matchFast: four lanes, then
// groups of four (noLane pads the last group). It reports false if a
// pattern does not suit the fast path.
func prepareLanes(patterns []string) (first [4]lane, more []lane, ok bool) {
	first = [4]lane{noLane, noLane, noLane, noLane}
	for i, p := range patterns {
		l, ok := prepareLane(p)
		if !ok {
			return first, nil, false
		}
		if i < 4 {
			first[i] = l
			continue
		}
		if (i-4)%4 == 0 {
			more = append(more, noLane, noLane, noLane, noLane)
		}
		more[i-4] = l
	}
	return first, more, true
}

// matchFast is HostSet.Match for wasm guests: hostInFast without its
// per-call check of the list, whose lanes were prepared by NewHostSet.
func (s *HostSet) matchFast(host string) bool {
	n := len(host)
	if n == 0 {
		return false
	}
	n -= int(b2u(host[n-1] == '.'))
	if b2u(n < 8)|b2u(!s.fast) != 0 {
		return hostInSlow(host, s.patterns)
	}
	hi, lo := tail16(host[:n])
	hi, lo = lower(hi), lower(lo)
	m, l := uint64(n), &s.first
	r := l[0].match(m, hi, lo) | l[1].match(m, hi, lo) | l[2].match(m, hi, lo)
	// Most sets are small: the fourth lane and the loop (whose condition
	// alone is a jump through the guest's dispatch, ≈8 ns a call) only for
	// larger ones.
	if len(s.patterns) <= 3 { // first[3] is noLane, more is empty
		return r != 0
	}
	r |= l[3].match(m, hi, lo)
	for i := 0; i+4 <= len(s.more); i += 4 {
		l := (*[4]lane)(s.more[i:])
		r |= l[0].match(m, hi, lo) | l[1].match(m, hi, lo) | l[2].match(m, hi, lo) | l[3].match(m, hi, lo)
	}
	return r != 0
}

// match returns 1 if the host, given as its last 16 bytes lowercased (hi,
// lo) and its length n, matches the lane's pattern, else 0. No branch: it
// inlines into hostInFast.
func (l *lane) match(n, hi, lo uint64) uint64 {
	return b2u(n-l.min <= l.span) & b2u((l.phi^hi)|(l.plo^lo)&l.mlo == 0)
}

// hostInRest finishes hostInFast when the first four patterns, p0..p3,
// are not the cached ones (hit == 0: prepare them) or there are more than
// four (match the rest with hostInMore). Patterns it cannot compare a word
// at a time send the call to hostInSlow.
func hostInRest(host string, allowed []string, hi, lo, n, hit uint64, p0, p1, p2, p3 string) bool {
	c := &patterns
	if hit == 0 && !c.prepare(p0, p1, p2, p3) {
		return hostInSlow(host, allowed)
	}
	m := c.l[0].match(n, hi, lo) | c.l[1].match(n, hi, lo) | c.l[2].match(n, hi, lo) | c.l[3].match(n, hi, lo)
	if len(allowed) > 4 {
		mr, bad := hostInMore(hi, lo, int(n), allowed[4:])
		if bad != 0 {
			return hostInSlow(host, allowed)
		}
		m |= mr
	}
	return m != 0
}

// hostInMore is hostInFast's loop over the patterns past the fourth,
// prepared one at a time (they are not cached).
func hostInMore(hi, lo uint64, n int, allowed []string) (match, bad uint64) {
	for _, p := range allowed {
		l, ok := prepareLane(p)
		if !ok {
			return 0, 1
		}
		match |= l.match(uint64(n), hi, lo)
	}
	return match, 0
}

// min64i is min in arithmetic (the builtin is a branch on wasm).
func min64i(a, b int) int {
	d := b - a
	return a + d&(d>>63)
}

// tail16 returns the last 16 bytes of s (8 <= len(s)) as two little-endian
// words, the last 8 in hi; when s is shorter than 16 the missing leading
// bytes of lo are zero.
func tail16(s string) (hi, lo uint64) {
	n := len(s)
	hi = load64(s[n-8:])
	d := n - 16
	off := d &^ (d >> 63)                      // max(n-16, 0)
	lo = load64(s[off:]) << uint(8*(16-n+off)) // (16 - n + off == 8: all shifted out)
	return hi, lo
}

// b2u converts a bool to 0 or 1 (a select, not a branch).
func b2u(b bool) uint64 {
	var u uint64
	if b {
		u = 1
	}
	return u
}

// inputView reports whether s's bytes lie in the hook input buffer
// (module.in, which warden_alloc hands to the host; empty in native builds,
// where hostInFast runs only in tests).
func inputView(s string) bool {
	b := uintptr(unsafe.Pointer(unsafe.SliceData(module.in)))
	return uintptr(unsafe.Pointer(unsafe.StringData(s)))-b < uintptr(len(module.in))
}
