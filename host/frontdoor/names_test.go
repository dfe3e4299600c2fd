package frontdoor

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, c := range []struct {
		name  string
		mode  ToolNames
		items []upstreamItem
		want  map[string]upstreamItem
	}{
		{
			name:  "prefixed",
			items: []upstreamItem{{"docs", "search"}, {"web", "search"}},
			want:  map[string]upstreamItem{"docs__search": {"docs", "search"}, "web__search": {"web", "search"}},
		},
		{
			name: "bare where unambiguous",
			mode: ToolNamesBare,
			items: []upstreamItem{
				{"docs", "search"}, {"web", "search"}, {"docs", "open"},
			},
			want: map[string]upstreamItem{
				"docs__search": {"docs", "search"}, "web__search": {"web", "search"}, "open": {"docs", "open"},
			},
		},
		{
			// A bare name equal to another item's qualified name yields: the qualified
			// names are claimed first.
			name:  "bare name taken by a qualified one",
			mode:  ToolNamesBare,
			items: []upstreamItem{{"a", "x"}, {"b", "x"}, {"c", "a__x"}},
			want: map[string]upstreamItem{
				"a__x": {"a", "x"}, "b__x": {"b", "x"}, "c__a__x": {"c", "a__x"},
			},
		},
		{
			name:  "invalid characters and length",
			items: []upstreamItem{{"docs", "read file"}, {"docs", long}},
			want: map[string]upstreamItem{
				ShortName("docs__read file", "docs", "read file"): {"docs", "read file"},
				ShortName("docs__"+long, "docs", long):            {"docs", long},
			},
		},
		{
			// A server name with the separator is only a label: a clash it causes is
			// resolved like any other.
			name:  "separator in server names",
			items: []upstreamItem{{"a__b", "c"}, {"a", "b__c"}},
			want: map[string]upstreamItem{
				"a__b__c":                         {"a", "b__c"},
				ShortName("a__b__c", "a__b", "c"): {"a__b", "c"},
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, dropped := assignNames(c.items, c.mode)
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(upstreamItem{})); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if len(dropped) != 0 {
				t.Errorf("dropped %v", dropped)
			}
			for n := range got {
				if !ValidName(n) {
					t.Errorf("%q is not a valid name", n)
				}
			}
			// Deterministic whatever the input order.
			rev := make([]upstreamItem, len(c.items))
			for i, it := range c.items {
				rev[len(rev)-1-i] = it
			}
			again, _ := assignNames(rev, c.mode)
			if diff := cmp.Diff(got, again, cmp.AllowUnexported(upstreamItem{})); diff != "" {
				t.Errorf("order changed the names:\n%s", diff)
			}
		})
	}
}

func TestShortName(t *testing.T) {
	n := ShortName("docs__"+strings.Repeat("é", 40), "docs", strings.Repeat("é", 40))
	if !ValidName(n) || len(n) != MaxNameLen {
		t.Errorf("ShortName = %q (%d bytes)", n, len(n))
	}
	if ShortName("a b", "s", "a b") == ShortName("a b", "s", "a_b") {
		t.Error("two upstream names share a short name")
	}
	for _, bad := range []string{"", "a b", "a.b", strings.Repeat("a", 65), "ü"} {
		if ValidName(bad) {
			t.Errorf("ValidName(%q) = true", bad)
		}
	}
}
