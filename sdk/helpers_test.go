package sdk

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

func TestURLHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://api.example.com/mcp", "api.example.com"},
		{"https://API.Example.com:8443/mcp?x=1", "API.Example.com"},
		{"http://user:pw@host.example.com:80/", "host.example.com"},
		{"http://good.com@evil.com/", "evil.com"},
		{"http://evil.com\\@good.com/", "evil.com"},
		{"http://evil.com#@good.com/", "evil.com"},
		{"http://[::1]:7777/mcp", "::1"},
		{"http://[::1/mcp", ""},
		{"http://127.0.0.1:7777", "127.0.0.1"},
		{"//cdn.example.com/x", "cdn.example.com"},
		{"localhost:8080/mcp", "localhost"},
		{"", ""},
		{"https://", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := URLHost(tc.in); got != tc.want {
				t.Fatalf("URLHost(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestHostIn(t *testing.T) {
	allowed := []string{"*.example.com", "127.0.0.1", "localhost", "::1"}
	tests := []struct {
		host string
		want bool
	}{
		{"a.example.com", true},
		{"A.B.EXAMPLE.COM", true},
		{"a.example.com.", true},
		{"example.com", false},
		{"badexample.com", false},
		{"example.com.evil.org", false},
		{"localhost", true},
		{"LocalHost", true},
		{"127.0.0.1", true},
		{"127.0.0.2", false},
		{"::1", true},
		{"", false},
	}
	set := NewHostSet(allowed...)
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			if got := HostIn(tc.host, allowed...); got != tc.want {
				t.Fatalf("HostIn(%q) = %v, want %v", tc.host, got, tc.want)
			}
			if got := set.Match(tc.host); got != tc.want {
				t.Fatalf("HostSet.Match(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
	t.Run("bad patterns match nothing", func(t *testing.T) {
		if HostIn("example.com", "*", "*.", "", "*example.com") {
			t.Fatal("matched")
		}
	})
}

func TestJSONStringField(t *testing.T) {
	tests := []struct {
		name, args, key, want string
		ok                    bool
	}{
		{"simple", `{"path":"/etc/passwd"}`, "path", "/etc/passwd", true},
		{"spaces", " { \"a\" : 1 , \"path\" : \"x\" } ", "path", "x", true},
		{"absent", `{"a":"b"}`, "path", "", false},
		{"not a string", `{"path":42}`, "path", "", false},
		{"nested not top-level", `{"o":{"path":"x"},"a":[{"path":"y"}]}`, "path", "", false},
		{"skip nested", `{"o":{"p":[1,{"q":"}"}]},"path":"z"}`, "path", "z", true},
		{"escaped key", `{"p\u0061th":"x"}`, "path", "x", true},
		{"escaped value", `{"path":"a\"b\\c\n\u00e9\ud83d\ude00"}`, "path", "a\"b\\c\né😀", true},
		{"lone surrogate", `{"path":"\ud800x"}`, "path", "\uFFFDx", true},
		{"duplicate: last wins", `{"path":"a","path":"b"}`, "path", "b", true},
		{"duplicate: last not a string", `{"path":"a","path":null}`, "path", "", false},
		{"empty object", `{}`, "path", "", false},
		{"empty string value", `{"path":""}`, "path", "", true},
		{"literals", `{"a":true,"b":false,"c":null,"d":-1.5e3,"path":"p"}`, "path", "p", true},
		{"not an object", `["path","x"]`, "path", "", false},
		{"truncated", `{"path":"x"`, "path", "", false},
		{"trailing garbage", `{"path":"x"} x`, "path", "", false},
		{"unterminated string", `{"path":"x}`, "path", "", false},
		{"raw control char", "{\"path\":\"a\nb\"}", "path", "", false},
		{"bad escape", `{"path":"\q"}`, "path", "", false},
		{"missing colon", `{"path" "x"}`, "path", "", false},
		{"empty", ``, "path", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := JSONStringField([]byte(tc.args), tc.key)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("JSONStringField(%s, %q) = %q, %v; want %q, %v", tc.args, tc.key, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHelpersDoNotAllocate(t *testing.T) {
	args := []byte(`{"o":{"p":[1,2]},"p\u0061th":"/etc/passwd","n":3}`)
	set := NewHostSet("localhost", "*.example.com")
	tests := []struct {
		name string
		fn   func()
	}{
		{"URLHost+HostIn", func() { _ = HostIn(URLHost("https://user@A.Example.com:443/x"), "localhost", "*.example.com") }},
		{"JSONStringField", func() { _, _ = JSONStringField(args, "path") }},
		{"HostSet.Match", func() { _ = set.Match("A.Example.com") }},
		{"HostSet.matchFast", func() { _ = set.matchFast("A.Example.com") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
				t.Fatalf("%v allocs", n)
			}
		})
	}
}

// The loop-free helpers (helpers_fast.go), used in wasm builds, must agree
// with the plain ones on every input: the examples below, then random ones
// built from the bytes that matter.
func TestFastHelpersMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(alphabet []string, max int) string {
		var b strings.Builder
		for n := rng.IntN(max); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	t.Run("URLHost", func(t *testing.T) {
		urls := []string{"https://mcp0.example.com/v1/mcp", "http://127.0.0.1:772/mcp", "https://browser.example.org:8443/mcp?session=7",
			"http://[::1]:7777/mcp", "http://good.com@evil.com/", "//cdn.example.com/x", "localhost:8080/mcp", "", "https://",
			"http://[::1/mcp", "http://evil.com\\@good.com/", "a://b://c", "https://" + strings.Repeat("x", 56), "https://" + strings.Repeat("x", 57)}
		alphabet := []string{"a", "B", ":", "/", "?", "#", "\\", "@", "[", "]", ".", "x", "h", "t", "p", "s", "1", "é", "://", "//"}
		for i := 0; i < 100000; i++ {
			u := gen(alphabet, 40)
			if i < len(urls) {
				u = urls[i]
			}
			if got, want := urlHostFast(u), abi.URLHost(u); got != want {
				t.Fatalf("URLHost(%q): fast %q, plain %q", u, got, want)
			}
		}
	})
	t.Run("HostIn", func(t *testing.T) {
		hosts := []string{"a.example.com", "A.B.EXAMPLE.COM", "a.example.com.", "example.com", "badexample.com", "example.com.evil.org",
			"localhost", "LocalHost", "127.0.0.1", "127.0.0.2", "::1", "", "mcp0.example.com", "browser.example.org", "x.localhost", "localhost."}
		pats := [][]string{{"*.example.com", "127.0.0.1", "localhost", "::1"}, {"*.example.com", "127.0.0.1", "localhost"},
			{"*", "*.", "", "*example.com"}, {"*.EXAMPLE.com.", "LOCALHOST"}, {".example.com"}, {"*.b.example.com"}, nil,
			{"a", "b", "c", "d", "e", "localhost"}, {"x.example.com", "y.example.com", "z.example.com", "w.example.com", "*.example.com"},
			{"x.example.org", "y.example.org", "z.example.org", "mcp0.example.com"}, {"x.example.org", "y.example.org", "browser.example.org"}}
		for _, h := range hosts {
			for _, p := range pats {
				if got, want := hostInFast(h, p), hostInSlow(h, p); got != want {
					t.Fatalf("HostIn(%q, %q): fast %v, plain %v", h, p, got, want)
				}
				if got, want := NewHostSet(p...).matchFast(h), hostInSlow(h, p); got != want {
					t.Fatalf("HostSet(%q).Match(%q): fast %v, plain %v", p, h, got, want)
				}
			}
		}
		alphabet := []string{"a", "B", ".", "*", "x", "E", "e", "m", "é", "*.", ".com"}
		for i := 0; i < 100000; i++ {
			h := gen(alphabet, 24)
			p := make([]string, rng.IntN(7))
			for j := range p {
				p[j] = gen(alphabet, 22)
				if rng.IntN(3) == 0 {
					p[j] = "*." + h[min(len(h), rng.IntN(4)):]
				} else if rng.IntN(3) == 0 {
					p[j] = strings.ToUpper(h)
				}
			}
			if got, want := hostInFast(h, p), hostInSlow(h, p); got != want {
				t.Fatalf("HostIn(%q, %q): fast %v, plain %v", h, p, got, want)
			}
			if got, want := NewHostSet(p...).matchFast(h), hostInSlow(h, p); got != want {
				t.Fatalf("HostSet(%q).Match(%q): fast %v, plain %v", p, h, got, want)
			}
		}
	})
	// hostInFast caches the prepared form of the last list of up to four
	// patterns (keyed by the strings' memory): reused lists, lists that share
	// some strings, and patterns that are views of the (reused) hook input
	// buffer must all give the plain answers.
	t.Run("cache", func(t *testing.T) {
		defer func(in []byte) { module.in = in }(module.in)
		module.in = make([]byte, 64)
		view := func(s string) string { // s written into the input buffer, as a view
			n := copy(module.in, s)
			return unsafe.String(&module.in[0], n)
		}
		lists := [][]string{{"*.example.com", "127.0.0.1", "localhost"}, {"*.example.com", "127.0.0.1"},
			{"*.example.org", "127.0.0.1", "localhost"}, {"*.example.com", "127.0.0.1", "localhost", "::1", "x.example.org"}}
		hosts := []string{"mcp0.example.com", "mcp0.example.org", "localhost", "127.0.0.1", "x.example.org", "LOCALHOST."}
		for i := 0; i < 20000; i++ {
			h := hosts[rng.IntN(len(hosts))]
			p := lists[rng.IntN(len(lists))]
			if rng.IntN(4) == 0 { // a list whose first pattern is a view of the input
				p = append([]string{view(hosts[rng.IntN(len(hosts))])}, p[1:]...)
			}
			if got, want := hostInFast(h, p), hostInSlow(h, p); got != want {
				t.Fatalf("HostIn(%q, %q): fast %v, plain %v", h, p, got, want)
			}
		}
	})
}
