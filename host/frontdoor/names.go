package frontdoor

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// MaxNameLen is the longest tool or prompt name the front door makes: 64 characters of
// [A-Za-z0-9_-] is the strictest rule common MCP clients apply to tool names.
const MaxNameLen = 64

// nameHashLen is how many hex digits of the SHA-256 of the upstream pair a shortened name
// ends with.
const nameHashLen = 10

// ValidName reports whether name is 1–MaxNameLen characters of [A-Za-z0-9_-].
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ShortName is the deterministic valid form of a name that is too long or has characters
// outside [A-Za-z0-9_-]: every other character becomes '_', the result is cut to leave room,
// and "_" plus the first 10 hex digits of SHA-256(server NUL item) is appended. It depends
// only on the upstream pair, so a client sees the same name across sessions and restarts.
func ShortName(name, server, item string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + item))
	suffix := "_" + hex.EncodeToString(sum[:])[:nameHashLen]
	b := []byte(name)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '_'
		}
	}
	if keep := MaxNameLen - len(suffix); len(b) > keep {
		b = b[:keep]
	}
	return string(b) + suffix
}

// upstreamItem is a tool or prompt of one upstream server.
type upstreamItem struct{ server, name string }

// assignNames gives each upstream item of one kind (the thread's tools, or its prompts) its
// front-door name, deterministically from the set alone:
//
//   - ToolNamesPrefixed: server__name. ToolNamesBare: name, where no other server of the set
//     has an item of that name; server__name where two do.
//   - A name that is not ValidName becomes its ShortName.
//   - Names are claimed qualified first, then bare, each group in (server, name) order; a
//     bare name already claimed falls back to the qualified form, and a name still taken to
//     the ShortName of the qualified form. An item whose every form is taken (a hash
//     collision) is left out, and returned in dropped.
func assignNames(items []upstreamItem, mode ToolNames) (names map[string]upstreamItem, dropped []upstreamItem) {
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b upstreamItem) int {
		return cmp.Or(cmp.Compare(a.server, b.server), cmp.Compare(a.name, b.name))
	})
	servers := map[string]int{} // item name -> how many servers have it
	for _, it := range items {
		servers[it.name]++
	}
	valid := func(name string, it upstreamItem) string {
		if ValidName(name) {
			return name
		}
		return ShortName(name, it.server, it.name)
	}
	names = make(map[string]upstreamItem, len(items))
	claim := func(it upstreamItem, forms ...string) {
		for _, f := range forms {
			if _, taken := names[f]; !taken {
				names[f] = it
				return
			}
		}
		dropped = append(dropped, it)
	}
	qualified := func(it upstreamItem) string { return valid(ToolName(it.server, it.name), it) }
	var bare []upstreamItem
	for _, it := range items {
		if mode == ToolNamesBare && servers[it.name] == 1 {
			bare = append(bare, it)
			continue
		}
		q := qualified(it)
		claim(it, q, ShortName(q, it.server, it.name))
	}
	for _, it := range bare {
		q := qualified(it)
		claim(it, valid(it.name, it), q, ShortName(q, it.server, it.name))
	}
	return names, dropped
}
