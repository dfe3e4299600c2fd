package decision

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestItemFilterAllowed(t *testing.T) {
	resources := ResourceFilter(&ServerVerdict{
		AllowResources: []string{"mem://note", "file:///docs/*", "file:///docs/a/*", "tmpl://{id}"},
		DenyResources:  []string{"file:///docs/private/*", "file:///docs/readme"},
	})
	prompts := PromptFilter(&ServerVerdict{AllowPrompts: []string{"summarise", "greet*"}, DenyPrompts: []string{"summarise"}})
	tests := []struct {
		name   string
		f      ItemFilter
		item   string
		wantOK bool
		why    string
	}{
		{"exact allow", resources, "mem://note", true, ""},
		{"prefix allow", resources, "file:///docs/x.md", true, ""},
		{"the prefix itself", resources, "file:///docs/", true, ""},
		{"nested prefix allow", resources, "file:///docs/a/b", true, ""},
		{"a template matches as a string", resources, "tmpl://{id}", true, ""},
		{"outside the allow list", resources, "file:///etc/passwd", false, `resource "file:///etc/passwd" is not in the server's allowed resources`},
		{"an exact entry is no prefix", resources, "mem://note2", false, `resource "mem://note2" is not in the server's allowed resources`},
		{"prefix deny", resources, "file:///docs/private/key", false, `resource "file:///docs/private/key" is denied on this server`},
		{"exact deny", resources, "file:///docs/readme", false, `resource "file:///docs/readme" is denied on this server`},
		{"exact deny is no prefix", resources, "file:///docs/readme2", true, ""},
		{"prompt allowed", prompts, "greet*", true, ""},
		{"a prompt * is no wildcard", prompts, "greeting", false, `prompt "greeting" is not in the server's allowed prompts`},
		{"prompt denied after allowed", prompts, "summarise", false, `prompt "summarise" is denied on this server`},
		{"no lists", ResourceFilter(&ServerVerdict{}), "anything://", true, ""},
		{"an empty allow list admits nothing", PromptFilter(&ServerVerdict{AllowPrompts: []string{}}), "p", false, `prompt "p" is not in the server's allowed prompts`},
		{"a lone * allows everything", ResourceFilter(&ServerVerdict{AllowResources: []string{"*"}}), "x://y", true, ""},
		{"a lone * denies everything", ResourceFilter(&ServerVerdict{DenyResources: []string{"*"}}), "", false, `resource "" is denied on this server`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := tc.f.Allowed(tc.item)
			if ok != tc.wantOK || why != tc.why {
				t.Fatalf("Allowed(%q) = %v, %q; want %v, %q", tc.item, ok, why, tc.wantOK, tc.why)
			}
		})
	}
}

// TestPrefixesAgreeWithLinearScan: the reduced prefix set answers exactly what testing each
// "*" entry in turn answers, on lists where prefixes nest and interleave.
func TestPrefixesAgreeWithLinearScan(t *testing.T) {
	list := sortedSet([]string{"a*", "ab*", "abc", "b/*", "b/c/*", "b0*", "ba*", "c", "*x", "d*", "dd*", "d/e*"})
	ps := prefixes(list)
	if want := []string{"a", "b/", "b0", "ba", "d"}; !slices.Equal(ps, want) {
		t.Fatalf("prefixes = %q, want %q", ps, want)
	}
	linear := func(s string) bool {
		for _, e := range list {
			if p, ok := strings.CutSuffix(e, "*"); ok && strings.HasPrefix(s, p) {
				return true
			}
		}
		return false
	}
	for _, s := range []string{"", "a", "ab", "abd", "b", "b/", "b/c", "b0", "b1", "ba", "bb", "c", "cx", "d", "d/e", "dd", "e", "*x", "*y", "\xff"} {
		if got, want := hasPrefixIn(ps, s), linear(s); got != want {
			t.Errorf("hasPrefixIn(%q) = %v, linear scan says %v", s, got, want)
		}
	}
}

// TestIntersectPatterns: the intersection of two resource allow lists matches exactly the
// URIs both match.
func TestIntersectPatterns(t *testing.T) {
	tests := []struct {
		have, with, want []string
	}{
		{nil, []string{"b", "a*"}, []string{"a*", "b"}},
		{[]string{"file:///*"}, []string{"file:///docs/*", "mem://x"}, []string{"file:///docs/*"}},
		{[]string{"file:///docs/a"}, []string{"file:///*"}, []string{"file:///docs/a"}},
		{[]string{"file:///docs/a", "mem://x"}, []string{"file:///docs/a"}, []string{"file:///docs/a"}},
		{[]string{"a*"}, []string{"b*"}, []string{}},
		{[]string{"x"}, []string{"y"}, []string{}},
		{[]string{"*"}, []string{"q", "r*"}, []string{"q", "r*"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.have, tc.with), func(t *testing.T) {
			got := intersectPatterns(tc.have, tc.with)
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("intersectPatterns(%q, %q) = %q, want %q", tc.have, tc.with, got, tc.want)
			}
			// Semantics: every probe is matched by the result exactly when both match it.
			match := func(list []string, s string) bool {
				return listed(list, prefixes(list), s)
			}
			for _, s := range []string{"a", "ab", "b", "bz", "q", "r", "rr", "x", "y", "mem://x", "file:///docs/a", "file:///docs/b", "file:///etc"} {
				haveOK := tc.have == nil || match(sortedSet(tc.have), s)
				if got, want := match(got, s), haveOK && match(sortedSet(tc.with), s); got != want {
					t.Errorf("%q: the intersection matches %v, both lists %v", s, got, want)
				}
			}
		})
	}
}

// TestWideResourceListsAreNotQuadratic: a filter of 50000 prefix entries (2.5·10⁹ steps
// for a pairwise reduction) is built by sorting and answers by binary search.
func TestWideResourceListsAreNotQuadratic(t *testing.T) {
	const n = 50000
	allow := make([]string, 0, n)
	for i := range n {
		allow = append(allow, fmt.Sprintf("file:///r%d/*", i))
	}
	f := ResourceFilter(&ServerVerdict{AllowResources: allow, DenyResources: allow[:n/2]})
	if len(f.allowPrefix) != n || len(f.denyPrefix) != n/2 {
		t.Fatalf("%d allow and %d deny prefixes, want %d and %d", len(f.allowPrefix), len(f.denyPrefix), n, n/2)
	}
	if ok, _ := f.Allowed(fmt.Sprintf("file:///r%d/x", n-1)); !ok {
		t.Error("the last prefix does not match")
	}
	if ok, _ := f.Allowed("file:///r7/x"); ok {
		t.Error("a denied prefix matches the allow list but passes")
	}
	if ok, _ := f.Allowed("file:///s"); ok {
		t.Error("a URI outside every prefix passes")
	}
	got := intersectPatterns(sortedSet(allow), allow[:10])
	if len(got) != 10 {
		t.Errorf("intersecting with 10 of the prefixes kept %d", len(got))
	}
}
