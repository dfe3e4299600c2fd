package leaktest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recorder is a test double of testing.TB's reporting half: it collects what
// AssertNoCanary reports instead of failing the real test.
type recorder struct {
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestNewCanaries(t *testing.T) {
	c := NewCanaries(t, "HOST_TOKEN", "NODE_TOKEN")
	d := NewCanaries(t, "HOST_TOKEN")
	shape := regexp.MustCompile(`^CANARY-HOST_TOKEN-[0-9a-f]{32}$`)
	if v := c.Value("HOST_TOKEN"); !shape.MatchString(v) {
		t.Errorf("value %q, want CANARY-HOST_TOKEN-<32 hex>", v)
	}
	if c.Value("HOST_TOKEN") == d.Value("HOST_TOKEN") {
		t.Error("two canaries of the same name have the same value")
	}
	if c.Value("MISSING") != "" {
		t.Error("Value of an unknown name is not empty")
	}
	vals := c.Values()
	env := c.Env()
	if len(vals) != 2 || len(env) != 2 || env[1] != "NODE_TOKEN="+vals[1] {
		t.Errorf("Values %q, Env %q", vals, env)
	}
	if o := c.Only("NODE_TOKEN", "MISSING"); len(o.All()) != 1 || o.Value("NODE_TOKEN") != vals[1] {
		t.Errorf("Only = %+v, want NODE_TOKEN alone", o.Names())
	}
	t.Run("setenv", func(t *testing.T) {
		c.Setenv(t)
		if os.Getenv("NODE_TOKEN") != c.Value("NODE_TOKEN") {
			t.Error("Setenv did not set NODE_TOKEN")
		}
	})
}

// Every encoding the scan knows finds the canary wherever it sits in the encoded data.
func TestCountForms(t *testing.T) {
	c := NewCanaries(t, "TOK")
	v := c.Value("TOK")
	b64 := func(enc *base64.Encoding, prefix string) string {
		return enc.EncodeToString([]byte(prefix + v + " trailing bytes"))
	}
	for _, tc := range []struct {
		name string
		text string
		want int
	}{
		{"clean", "nothing to see " + strings.Repeat("CANARY-TOK-", 3), 0},
		{"raw", "Authorization: Bearer " + v, 1},
		{"raw twice", v + "," + v, 2},
		{"json string", fmt.Sprintf(`{"value":%q}`, v), 1},
		{"base64 aligned", `{"data":"` + b64(base64.StdEncoding, "") + `"}`, 1},
		{"base64 offset 1", b64(base64.StdEncoding, "x"), 1},
		{"base64 offset 2", b64(base64.StdEncoding, "xy"), 1},
		{"base64 offset 3", b64(base64.StdEncoding, "xyz"), 1},
		{"base64 url", b64(base64.URLEncoding, "?"), 1},
		{"base64 raw url", b64(base64.RawURLEncoding, "ab"), 1},
		{"hex", hex.EncodeToString([]byte("k=" + v)), 1},
		{"HEX", strings.ToUpper(hex.EncodeToString([]byte(v))), 1},
		{"truncated", v[:len(v)-1], 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Count(c, TextSource(tc.name, tc.text)); got != tc.want {
				t.Errorf("Count = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAssertNoCanaryClean(t *testing.T) {
	c := NewCanaries(t, "HOST_TOKEN")
	up := newUpstream(t)
	p := NewProxy(t, up.url, ProxyOptions{})
	s := NewRecordingServer(t, RecordingOptions{})
	conn := dial(t, p.URL())
	call(t, conn, initReq)
	get(t, s.BaseURL()+"/plain", nil)
	log := filepath.Join(t.TempDir(), "host.log")
	if err := os.WriteFile(log, []byte("level=info msg=started\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var r recorder
	ok := AssertNoCanary(&r, c, FramesSource(p), RequestsSource(s), FileSource("host log", log),
		BufferSource("status", bytes.NewBufferString("ready")), ErrorSource("error", errors.New("boom")), ErrorSource("no error", nil))
	if !ok || len(r.errs) != 0 {
		t.Errorf("AssertNoCanary on clean sources = %v, reported %q", ok, r.errs)
	}
}

// A canary deliberately routed into a frame, a request header and a log each makes the
// assertion fail once, naming the source — and the messages never carry the value.
func TestAssertNoCanaryFindsLeaks(t *testing.T) {
	c := NewCanaries(t, "FRAME_SECRET", "HEADER_SECRET", "LOG_SECRET", "UNUSED_SECRET")
	up := newUpstream(t)
	p := NewProxy(t, up.url, ProxyOptions{})
	s := NewRecordingServer(t, RecordingOptions{})

	conn := dial(t, p.URL())
	call(t, conn, `{"jsonrpc":"2.0","id":1,"method":"test/echo","params":{"token":"`+c.Value("FRAME_SECRET")+`"}}`)

	get(t, s.BaseURL()+"/plain", http.Header{"X-Api-Key": {c.Value("HEADER_SECRET")}})

	var log Buffer
	fmt.Fprintf(&log, "level=debug msg=\"process output\" data=%s\n",
		base64.StdEncoding.EncodeToString([]byte("env: LOG_SECRET="+c.Value("LOG_SECRET")+"\n")))

	var r recorder
	ok := AssertNoCanary(&r, c, FramesSource(p), RequestsSource(s), BufferSource("host log", &log), TextSource("status", "all clean"))
	if ok {
		t.Error("AssertNoCanary reported clean")
	}
	if len(r.errs) != 3 {
		t.Fatalf("reported %d failures, want 3: %q", len(r.errs), r.errs)
	}
	for i, want := range []struct{ canary, source string }{
		{"FRAME_SECRET", "proxy frames"},
		{"HEADER_SECRET", "upstream requests to " + s.BaseURL()},
		{"LOG_SECRET", "host log"},
	} {
		msg := r.errs[i]
		if !strings.Contains(msg, "canary "+want.canary+" found in "+want.source) {
			t.Errorf("failure %d = %q, want it to name %s and %s", i, msg, want.canary, want.source)
		}
		if !strings.Contains(msg, "[CANARY:"+want.canary+"]") {
			t.Errorf("failure %d = %q, want a redacted excerpt", i, msg)
		}
	}
	all := strings.Join(r.errs, "\n")
	if n := Count(c, TextSource("failure messages", all)); n != 0 {
		t.Errorf("the failure messages carry %d canary occurrence(s):\n%s", n, c.Redact(all))
	}
	// The frame went up and came back in the echo: counted each time.
	if n := Count(c, FramesSource(p)); n != 2 {
		t.Errorf("Count(frames) = %d, want 2 (request and echoed answer)", n)
	}
	if !strings.Contains(r.errs[2], "base64") {
		t.Errorf("log finding %q, want it to say the canary was base64", r.errs[2])
	}
}

// A source that cannot be read fails the assertion: an unread log proves nothing.
func TestAssertNoCanaryUnreadable(t *testing.T) {
	c := NewCanaries(t, "TOK")
	missing := filepath.Join(t.TempDir(), "no.log")
	var r recorder
	if AssertNoCanary(&r, c, FileSource("decision log", missing), Source{Name: "empty"}) {
		t.Error("AssertNoCanary reported clean")
	}
	if len(r.errs) != 2 || !strings.Contains(r.errs[0], "decision log") || !strings.Contains(r.errs[1], "empty") {
		t.Errorf("reported %q, want one failure per unreadable source", r.errs)
	}
	if n := Count(c, FileSource("decision log", missing)); n != -1 {
		t.Errorf("Count = %d, want -1", n)
	}
	_, err := Scan(c, Source{Name: "empty"})
	if !errors.Is(err, ErrNilSource) {
		t.Errorf("Scan of an empty Source: %v, want ErrNilSource", err)
	}
}

func TestRedact(t *testing.T) {
	c := NewCanaries(t, "A", "B")
	s := "a=" + c.Value("A") + " b=" + base64.StdEncoding.EncodeToString([]byte(c.Value("B")))
	got := c.Redact(s)
	if strings.Contains(got, c.Value("A")) || !strings.HasPrefix(got, "a=[CANARY:A] b=") || !strings.Contains(got, "[CANARY:B]") {
		t.Errorf("Redact = %q", got)
	}
	if n := Count(c, TextSource("redacted", got)); n != 0 {
		t.Errorf("redacted text still has %d occurrence(s)", n)
	}
}
