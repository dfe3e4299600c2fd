package decision

import (
	"fmt"
	"slices"
	"strings"
)

// ItemFilter is a server's effective prompt or resource lists, from the servers-hook verdict:
// an allow list (nil: every item) and a deny list applied after it. Build it with
// PromptFilter or ResourceFilter, which sort the lists and, for resources, index the prefix
// entries; a filter built by hand matches names exactly and must keep both lists sorted sets.
// An ItemFilter is immutable once built and safe for concurrent use.
type ItemFilter struct {
	// Allow is an allow list; nil means every item, an empty list none.
	Allow []string
	// Deny is applied after Allow.
	Deny []string

	kind string // "prompt" or "resource", for the reasons; "" reads "item"
	// For resources, an entry ending in "*" matches every URI it is a prefix of. These hold
	// such entries without the "*", sorted and reduced so that none is a prefix of another:
	// then the only entry that can be a prefix of a URI is the greatest one not above it, one
	// binary search.
	allowPrefix, denyPrefix []string
}

// PromptFilter is the prompt filter of a server's verdict. Prompt names match exactly.
func PromptFilter(v *ServerVerdict) ItemFilter {
	return ItemFilter{Allow: sortedSet(v.AllowPrompts), Deny: sortedSet(v.DenyPrompts), kind: "prompt"}
}

// ResourceFilter is the resource filter of a server's verdict. Entries match a resource's
// URI (or a template's URI template) exactly, or by prefix when they end in "*".
func ResourceFilter(v *ServerVerdict) ItemFilter {
	f := ItemFilter{Allow: sortedSet(v.AllowResources), Deny: sortedSet(v.DenyResources), kind: "resource"}
	f.allowPrefix = prefixes(f.Allow)
	f.denyPrefix = prefixes(f.Deny)
	return f
}

// Allowed reports whether the item named name passes the filter, and why not.
func (f ItemFilter) Allowed(name string) (ok bool, why string) {
	kind := f.kind
	if kind == "" {
		kind = "item"
	}
	if f.Allow != nil && !listed(f.Allow, f.allowPrefix, name) {
		return false, fmt.Sprintf("%s %q is not in the server's allowed %ss", kind, name, kind)
	}
	if listed(f.Deny, f.denyPrefix, name) {
		return false, fmt.Sprintf("%s %q is denied on this server", kind, name)
	}
	return true, ""
}

// listed reports whether name is in the sorted set exact or has one of prefixSet's entries
// as a prefix. prefixSet must be as prefixes builds it. O(log n).
func listed(exact, prefixSet []string, name string) bool {
	if _, ok := slices.BinarySearch(exact, name); ok {
		return true
	}
	return hasPrefixIn(prefixSet, name)
}

// hasPrefixIn reports whether some entry of the prefix-free sorted set ps is a prefix of s.
// Every string between a prefix p of s and s itself starts with p, so in a prefix-free set
// the greatest entry not above s is the only candidate.
func hasPrefixIn(ps []string, s string) bool {
	i, found := slices.BinarySearch(ps, s)
	if found {
		return true
	}
	return i > 0 && strings.HasPrefix(s, ps[i-1])
}

// prefixes returns the entries of the sorted set list that end in "*", without it, as a
// sorted set in which no entry is a prefix of another (the longer one is redundant). nil
// when there are none.
func prefixes(list []string) []string {
	var out []string
	for _, e := range list {
		if p, ok := strings.CutSuffix(e, "*"); ok {
			out = append(out, p)
		}
	}
	if out == nil {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// In sorted order, every entry that has an earlier entry as a prefix comes right after
	// a run of entries sharing that prefix, so comparing with the last kept one suffices.
	kept := out[:1]
	for _, p := range out[1:] {
		if !strings.HasPrefix(p, kept[len(kept)-1]) {
			kept = append(kept, p)
		}
	}
	return kept
}

// intersectPatterns is intersect for resource lists, whose "*" entries match by prefix: the
// result matches exactly the URIs both lists match. An entry of either list is kept when
// the other list matches everything it does (an exact URI the other matches; a prefix
// entry that a shorter prefix entry of the other covers). have nil means "no list yet".
// O((n+m) log(n+m)).
func intersectPatterns(have, with []string) []string {
	w := sortedSet(with)
	if have == nil {
		return w
	}
	hp, wp := prefixes(have), prefixes(w)
	out := []string{}
	keep := func(e string, exact, ps []string) {
		if p, ok := strings.CutSuffix(e, "*"); ok {
			// A pattern is covered only by a pattern (an exact entry matches one URI).
			if hasPrefixIn(ps, p) {
				out = append(out, e)
			}
			return
		}
		if listed(exact, ps, e) {
			out = append(out, e)
		}
	}
	for _, e := range have {
		keep(e, w, wp)
	}
	for _, e := range w {
		keep(e, have, hp)
	}
	return sortedSet(out)
}
