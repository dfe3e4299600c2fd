package sdk

import (
	"testing"
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
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			if got := HostIn(tc.host, allowed...); got != tc.want {
				t.Fatalf("HostIn(%q) = %v, want %v", tc.host, got, tc.want)
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
	tests := []struct {
		name string
		fn   func()
	}{
		{"URLHost+HostIn", func() { _ = HostIn(URLHost("https://user@A.Example.com:443/x"), "localhost", "*.example.com") }},
		{"JSONStringField", func() { _, _ = JSONStringField(args, "path") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
				t.Fatalf("%v allocs", n)
			}
		})
	}
}
