package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/protocol"
)

// wireTypes gives, per method, fresh values of its params and result types.
type wireTypes struct {
	params func() any
	result func() any
}

func methods() map[string]wireTypes {
	return map[string]wireTypes{
		protocol.MethodInitialize: {
			func() any { return new(protocol.InitializeParams) },
			func() any { return new(protocol.InitializeResponse) },
		},
		protocol.MethodThreadStart: {
			func() any { return new(protocol.ThreadStartParams) },
			func() any { return new(protocol.ThreadStartResponse) },
		},
		protocol.MethodThreadList: {
			func() any { return new(protocol.ThreadListParams) },
			func() any { return new(protocol.ThreadListResponse) },
		},
		protocol.MethodMcpServerStatusList: {
			func() any { return new(protocol.ListMcpServerStatusParams) },
			func() any { return new(protocol.ListMcpServerStatusResponse) },
		},
		protocol.MethodMcpServerToolCall: {
			func() any { return new(protocol.McpServerToolCallParams) },
			func() any { return new(mcp.CallToolResult) },
		},
		protocol.MethodMcpServerReload: {
			func() any { return new(protocol.ReloadParams) },
			func() any { return new(protocol.ReloadResponse) },
		},
		protocol.MethodMcpServerOauthLogin: {
			func() any { return new(protocol.McpServerOauthLoginParams) },
			func() any { return new(protocol.McpServerOauthLoginResponse) },
		},
	}
}

func notifications() map[string]func() any {
	return map[string]func() any{
		protocol.NotifyMcpServerStartupStatusUpdated: func() any { return new(protocol.McpServerStartupStatusUpdatedNotification) },
		protocol.NotifyMcpServerToolsUpdated:         func() any { return new(protocol.McpServerToolsUpdatedNotification) },
		protocol.NotifyMcpServerOauthLoginCompleted:  func() any { return new(protocol.McpServerOauthLoginCompletedNotification) },
	}
}

// strict decodes exactly one JSON value into v, refusing unknown fields.
func strict(t *testing.T, what string, raw []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: decode: %v", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: trailing data after the value", what)
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return b
}

// sameJSON fails unless a and b are the same JSON value (key order and whitespace
// aside). Numbers are compared by their text, so 1 and 1.0 differ.
func sameJSON(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var w, g any
	for _, x := range []struct {
		b []byte
		v *any
	}{{want, &w}, {got, &g}} {
		dec := json.NewDecoder(bytes.NewReader(x.b))
		dec.UseNumber()
		if err := dec.Decode(x.v); err != nil {
			t.Fatalf("%s: %v in %s", what, err, x.b)
		}
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s: re-encoding differs from the golden (-golden +re-encoded):\n%s", what, d)
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// requestMethod reads the method of the golden request with the given base name.
func requestMethod(t *testing.T, base string) string {
	t.Helper()
	var req protocol.Request
	strict(t, base+".request.json", readGolden(t, base+".request.json"), &req)
	return req.Method
}

// TestGoldenRoundTrip decodes every golden file through the Go types and encodes it
// again: the result must be the same JSON, so no member is dropped, renamed or added.
func TestGoldenRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	ms, ns := methods(), notifications()
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			golden := readGolden(t, name)
			switch {
			case strings.HasSuffix(name, ".request.json"):
				var req protocol.Request
				strict(t, name, golden, &req)
				types, ok := ms[req.Method]
				if !ok {
					t.Fatalf("unknown method %q", req.Method)
				}
				params := types.params()
				if err := protocol.DecodeParams(req.Params, params); err != nil {
					t.Fatalf("DecodeParams: %v", err)
				}
				req.Params = mustMarshal(t, params)
				sameJSON(t, name, golden, mustMarshal(t, req))

			case strings.HasSuffix(name, ".response.json"):
				method := requestMethod(t, strings.TrimSuffix(name, ".response.json"))
				var resp protocol.Response
				strict(t, name, golden, &resp)
				if resp.Error != nil || resp.Result == nil {
					t.Fatalf("a .response.json golden must hold a result")
				}
				result := ms[method].result()
				strict(t, name+" result", resp.Result, result)
				resp.Result = mustMarshal(t, result)
				sameJSON(t, name, golden, mustMarshal(t, resp))

			case strings.HasSuffix(name, ".error.json"):
				var resp protocol.Response
				strict(t, name, golden, &resp)
				if resp.Error == nil || resp.Result != nil {
					t.Fatalf("an .error.json golden must hold an error")
				}
				sameJSON(t, name, golden, mustMarshal(t, resp))

			case strings.HasSuffix(name, ".notification.json"):
				var n protocol.Notification
				strict(t, name, golden, &n)
				mk, ok := ns[n.Method]
				if !ok {
					t.Fatalf("unknown notification %q", n.Method)
				}
				params := mk()
				strict(t, name+" params", n.Params, params)
				n.Params = mustMarshal(t, params)
				sameJSON(t, name, golden, mustMarshal(t, n))

			default:
				t.Fatalf("golden file %s has no known suffix", name)
			}
		})
	}
}

// TestGoldenCoverage checks there is a request and a response golden for every method
// and a golden for every notification.
func TestGoldenCoverage(t *testing.T) {
	byMethod := map[string][]string{}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, path := range files {
		name := filepath.Base(path)
		var env struct {
			Method string `json:"method"`
		}
		if err := json.Unmarshal(readGolden(t, name), &env); err != nil {
			t.Fatal(err)
		}
		if env.Method != "" {
			kind := strings.TrimSuffix(name[strings.Index(name, ".")+1:], ".json")
			byMethod[env.Method] = append(byMethod[env.Method], kind)
			if kind == "request" {
				base := strings.TrimSuffix(name, ".request.json")
				if _, err := os.Stat(filepath.Join("testdata", base+".response.json")); err != nil {
					t.Errorf("%s has no response golden", name)
				}
			}
		}
	}
	for m := range methods() {
		if !contains(byMethod[m], "request") {
			t.Errorf("method %s has no request golden", m)
		}
	}
	for n := range notifications() {
		if !contains(byMethod[n], "notification") {
			t.Errorf("notification %s has no golden", n)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// goldenParams returns the params object of a method's golden request.
func goldenParams(t *testing.T, method string) map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.request.json"))
	for _, path := range files {
		var req struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal(readGolden(t, filepath.Base(path)), &req); err != nil {
			t.Fatal(err)
		}
		if req.Method == method {
			return req.Params
		}
	}
	t.Fatalf("no golden request for %s", method)
	return nil
}

// wantInvalidParams fails unless err is CodeInvalidParams whose message contains every
// fragment and none of the forbidden strings.
func wantInvalidParams(t *testing.T, err error, fragments []string, forbidden ...string) {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("want *protocol.Error, got %v", err)
	}
	if pe.Code != protocol.CodeInvalidParams {
		t.Fatalf("code = %d, want %d (%s)", pe.Code, protocol.CodeInvalidParams, pe.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(pe.Message, f) {
			t.Errorf("message %q does not contain %q", pe.Message, f)
		}
	}
	for _, f := range forbidden {
		if strings.Contains(pe.Message, f) {
			t.Errorf("message %q contains %q", pe.Message, f)
		}
	}
}

// TestUnknownFieldsRejected: for every method, adding an unknown member to the golden
// params — at the top, with a different letter case, or as "_meta" where it is not a
// declared field — is an invalid-params error naming the member.
func TestUnknownFieldsRejected(t *testing.T) {
	for method, types := range methods() {
		t.Run(method, func(t *testing.T) {
			base := goldenParams(t, method)
			cases := map[string]string{"bogus": "bogus", "_meta": "_meta"}
			for k := range base {
				// The same name in another letter case must not match.
				cases[strings.ToUpper(k[:1])+k[1:]] = strings.ToUpper(k[:1]) + k[1:]
			}
			for key, named := range cases {
				if method == protocol.MethodMcpServerToolCall && key == "_meta" {
					continue
				}
				p := map[string]any{}
				for k, v := range base {
					p[k] = v
				}
				p[key] = "wrdn-secret-value"
				err := protocol.DecodeParams(mustMarshal(t, p), types.params())
				wantInvalidParams(t, err, []string{`unknown field "` + named + `"`}, "wrdn-secret-value")
			}
		})
	}
}

func TestDecodeParams(t *testing.T) {
	const secret = "wrdn-secret-value"
	tests := []struct {
		name   string
		params string
		into   func() any
		want   []string // message fragments; nil means success
	}{
		{"absent params, all optional", ``, func() any { return new(protocol.ThreadStartParams) }, nil},
		{"null params, all optional", `null`, func() any { return new(protocol.ListMcpServerStatusParams) }, nil},
		{"reload without params", `null`, func() any { return new(protocol.ReloadParams) }, nil},
		{"null members are absent", `{"threadId":null,"cursor":null,"limit":null,"detail":null}`, func() any { return new(protocol.ListMcpServerStatusParams) }, nil},
		{"params array", `["a"]`, func() any { return new(protocol.ThreadListParams) }, []string{"params must be an object"}},
		{"params string", `"x"`, func() any { return new(protocol.ThreadListParams) }, []string{"params must be an object"}},
		{"missing required", `{"threadId":"t","tool":"echo"}`, func() any { return new(protocol.McpServerToolCallParams) }, []string{`missing field "server"`}},
		{"missing required with null params", `null`, func() any { return new(protocol.McpServerToolCallParams) }, []string{`missing field "threadId"`}},
		{"missing client name", `{"clientInfo":{"version":"1"}}`, func() any { return new(protocol.InitializeParams) }, []string{`missing field "clientInfo.name"`}},
		{"wrong type string", `{"threadId":5,"server":"s","tool":"t"}`, func() any { return new(protocol.McpServerToolCallParams) }, []string{`field "threadId" must be a string`}},
		{"wrong type number", `{"limit":"` + secret + `"}`, func() any { return new(protocol.ThreadListParams) }, []string{`field "limit" must be a non-negative integer`}},
		{"negative limit", `{"limit":-1}`, func() any { return new(protocol.ThreadListParams) }, []string{`field "limit" must be a non-negative integer`}},
		{"limit overflow", `{"limit":4294967296}`, func() any { return new(protocol.ThreadListParams) }, []string{`field "limit"`}},
		{"fractional limit", `{"limit":1.5}`, func() any { return new(protocol.ThreadListParams) }, []string{`field "limit"`}},
		{"arguments not an object", `{"threadId":"t","server":"s","tool":"x","arguments":["` + secret + `"]}`, func() any { return new(protocol.McpServerToolCallParams) }, []string{`field "arguments" must be an object`}},
		{"_meta not an object", `{"threadId":"t","server":"s","tool":"x","_meta":"` + secret + `"}`, func() any { return new(protocol.McpServerToolCallParams) }, []string{`field "_meta" must be an object`}},
		{"arguments free-form", `{"threadId":"t","server":"s","tool":"x","arguments":{"Any":{"thing":[1,{"a":1,"a":2}]}},"_meta":{"k":1}}`, func() any { return new(protocol.McpServerToolCallParams) }, nil},
		{"duplicate field", `{"threadId":"a","threadId":"b","server":"s","tool":"t"}`, func() any { return new(protocol.McpServerToolCallParams) }, []string{`duplicate field "threadId"`}},
		{"nested unknown", `{"selectedCapabilityRoots":[{"id":"p@1","location":{"type":"local","path":"/p","envId":"` + secret + `"}}]}`, func() any { return new(protocol.ThreadStartParams) }, []string{`unknown field "selectedCapabilityRoots[0].location.envId"`}},
		{"nested wrong type", `{"selectedCapabilityRoots":[{"id":"p@1","location":{"type":"local","path":7}}]}`, func() any { return new(protocol.ThreadStartParams) }, []string{`field "selectedCapabilityRoots[0].location.path" must be a string`}},
		{"nested missing", `{"selectedCapabilityRoots":[{"id":"p@1","location":{"type":"local","path":"/p"}},{"id":"q@1","location":{"type":"environment","path":"/q"}}]}`, func() any { return new(protocol.ThreadStartParams) }, []string{`missing field "selectedCapabilityRoots[1].location.environmentId"`}},
		{"environmentId on local", `{"selectedCapabilityRoots":[{"id":"p@1","location":{"type":"local","path":"/p","environmentId":"e"}}]}`, func() any { return new(protocol.ThreadStartParams) }, []string{`"selectedCapabilityRoots[0].location.environmentId" is not allowed`}},
		{"bad location type", `{"selectedCapabilityRoots":[{"id":"p@1","location":{"type":"` + secret + `","path":"/p"}}]}`, func() any { return new(protocol.ThreadStartParams) }, []string{`field "selectedCapabilityRoots[0].location.type" must be "local" or "environment"`}},
		{"bad kind", `{"kind":"` + secret + `"}`, func() any { return new(protocol.ThreadStartParams) }, []string{`field "kind" must be one of`}},
		{"bad detail", `{"detail":"` + secret + `"}`, func() any { return new(protocol.ListMcpServerStatusParams) }, []string{`field "detail" must be "full" or "toolsAndAuthOnly"`}},
		{"empty thread id", `{"threadId":""}`, func() any { return new(protocol.ListMcpServerStatusParams) }, []string{`field "threadId" must be a non-empty string`}},
		{"bad reload mode", `{"mode":"` + secret + `"}`, func() any { return new(protocol.ReloadParams) }, []string{`field "mode" must be "strict" or "bestEffort"`}},
		{"oauth timeout", `{"name":"s","timeoutSecs":0}`, func() any { return new(protocol.McpServerOauthLoginParams) }, []string{`field "timeoutSecs" must be a positive integer`}},
		{"codex initialize with null capabilities", `{"clientInfo":{"name":"c","title":null,"version":"1"},"capabilities":null}`, func() any { return new(protocol.InitializeParams) }, nil},
		{"malformed", `{"limit":`, func() any { return new(protocol.ThreadListParams) }, []string{"malformed"}},
		{"trailing data", `{"limit":1} {"limit":2}`, func() any { return new(protocol.ThreadListParams) }, []string{"malformed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := protocol.DecodeParams(json.RawMessage(tt.params), tt.into())
			if tt.want == nil {
				if err != nil {
					t.Fatalf("DecodeParams: %v", err)
				}
				return
			}
			wantInvalidParams(t, err, tt.want, secret)
		})
	}
}

func TestDecodeParamsValues(t *testing.T) {
	var p protocol.McpServerToolCallParams
	err := protocol.DecodeParams(json.RawMessage(`{"threadId":"t","server":"s","tool":"x","arguments":null,"_meta":null}`), &p)
	if err != nil {
		t.Fatal(err)
	}
	if p.Arguments != nil || p.Meta != nil {
		t.Errorf("null arguments/_meta should decode as nil, got %s / %s", p.Arguments, p.Meta)
	}

	var s protocol.ThreadStartParams
	if err := protocol.DecodeParams(json.RawMessage(`{"kind":"reviewer","cwd":"/w"}`), &s); err != nil {
		t.Fatal(err)
	}
	want := protocol.ThreadStartParams{Kind: ptr(protocol.ThreadKindReviewer), Cwd: ptr("/w")}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	var r protocol.ReloadParams
	if err := protocol.DecodeParams(nil, &r); err != nil || r.EffectiveMode() != protocol.ReloadStrict {
		t.Errorf("absent reload params: mode %q, err %v; want strict", r.EffectiveMode(), err)
	}

	if err := protocol.DecodeParams(json.RawMessage(`{}`), s); err == nil {
		t.Error("DecodeParams into a non-pointer should fail")
	}
}

func ptr[T any](v T) *T { return &v }

func TestEmptyCollectionsEncode(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{protocol.ThreadListResponse{}, `{"data":[],"nextCursor":null}`},
		{protocol.ListMcpServerStatusResponse{}, `{"data":[],"nextCursor":null}`},
		{protocol.ListMcpServerStatusResponse{Data: []protocol.McpServerStatus{{Name: "a", AuthStatus: protocol.AuthUnsupported, StartupStatus: protocol.StartupStarting}}},
			`{"data":[{"name":"a","pluginId":null,"tools":{},"toolsError":null,"authStatus":"unsupported","startupStatus":"starting"}],"nextCursor":null}`},
		{&protocol.ReloadResponse{}, `{"refreshed":[],"failed":[]}`},
		{protocol.McpServerStartupStatusUpdatedNotification{ThreadID: "t", Name: "n", Status: protocol.StartupReady}, `{"threadId":"t","name":"n","status":"ready","error":null}`},
		{protocol.Response{JSONRPC: protocol.Version, Error: protocol.ParseError()}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid JSON"}}`},
	}
	for _, tt := range tests {
		got := mustMarshal(t, tt.v)
		if string(got) != tt.want {
			t.Errorf("%T encodes as\n%s\nwant\n%s", tt.v, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	cause := errors.New("connection reset")
	e := protocol.ToolCallFailed("t1", "docs", "search", cause)
	if e.Code != protocol.CodeToolCallFailed || !errors.Is(e, cause) {
		t.Errorf("ToolCallFailed: code %d, wraps cause %v", e.Code, errors.Is(e, cause))
	}
	if string(e.Data) != `{"server":"docs","threadId":"t1","tool":"search"}` {
		t.Errorf("data = %s", e.Data)
	}
	wrapped := fmt.Errorf("backend: %w", protocol.ThreadNotFound("t9"))
	var pe *protocol.Error
	if !errors.As(wrapped, &pe) || pe.Code != protocol.CodeThreadNotFound || pe.Message != `thread "t9" not found` {
		t.Errorf("As through a wrap: %#v", pe)
	}
	if !errors.Is(wrapped, &protocol.Error{Code: protocol.CodeThreadNotFound}) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(wrapped, &protocol.Error{Code: protocol.CodeToolDenied}) {
		t.Error("errors.Is matched another code")
	}
	ef := protocol.Errorf(protocol.CodeReloadFailed, "reload: %w", cause)
	if !errors.Is(ef, cause) || ef.Message != "reload: connection reset" {
		t.Errorf("Errorf: %v", ef)
	}
	if got := protocol.ReloadFailed("t2", cause).Error(); got != `reload failed for thread "t2": connection reset (code -32005)` {
		t.Errorf("Error() = %q", got)
	}
	long := strings.Repeat("m", 1000)
	if msg := protocol.MethodNotFound(long).Message; len(msg) > 200 {
		t.Errorf("MethodNotFound does not shorten a long name: %d bytes", len(msg))
	}
	// The codes are a wire contract: their values never change (and the map literal
	// refuses duplicates at compile time).
	codes := map[int64]int64{
		protocol.CodeParseError: -32700, protocol.CodeInvalidRequest: -32600,
		protocol.CodeMethodNotFound: -32601, protocol.CodeInvalidParams: -32602,
		protocol.CodeInternalError: -32603, protocol.CodeThreadNotFound: -32001,
		protocol.CodeServerNotAvailable: -32002, protocol.CodeToolDenied: -32003,
		protocol.CodeToolCallFailed: -32004, protocol.CodeReloadFailed: -32005,
		protocol.CodeNotInitialized: -32006, protocol.CodeNotSupported: -32007,
	}
	for got, want := range codes {
		if got != want {
			t.Errorf("code %d changed; want %d", got, want)
		}
	}
}

// TestDecodeParamsGeneric exercises DecodeParams on shapes the params types do not use
// today: maps, floats, booleans, arrays, embedded structs, untagged and skipped fields.
func TestDecodeParamsGeneric(t *testing.T) {
	type inner struct {
		A int8 `json:"a"`
	}
	type Embedded struct {
		E string `json:"e"`
	}
	type local struct {
		Embedded
		M     map[string]inner `json:"m"`
		F     float64          `json:"f"`
		B     bool             `json:"b"`
		Skip  string           `json:"-"`
		Any   any              `json:"any"`
		Arr   [2]int           `json:"arr"`
		NoTag string
	}
	tests := []struct {
		params string
		want   string // "" for success
	}{
		{`{"e":"x","m":{"k":{"a":-128}},"f":1.5e3,"b":true,"any":{"x":[1,{"y":2}]},"arr":[1,2],"NoTag":"n"}`, ""},
		{`{"m":{"k":{"a":200}}}`, `field "m.k.a" must be an integer in range`},
		{`{"m":{"k":{"z":1}}}`, `unknown field "m.k.z"`},
		{`{"m":{"k":{},"k":{}}}`, `duplicate field "m.k"`},
		{`{"m":[]}`, `field "m" must be an object`},
		{`{"f":"1"}`, `field "f" must be a number`},
		{`{"b":1}`, `field "b" must be a boolean`},
		{`{"arr":{}}`, `field "arr" must be an array`},
		{`{"Skip":"x"}`, `unknown field "Skip"`},
		{`{"notag":"x"}`, `unknown field "notag"`},
		{`{"Embedded":{}}`, `unknown field "Embedded"`},
	}
	for _, tt := range tests {
		var v local
		err := protocol.DecodeParams(json.RawMessage(tt.params), &v)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.params, err)
			} else if v.E != "x" || v.M["k"].A != -128 || v.F != 1500 || !v.B || v.Arr != [2]int{1, 2} || v.NoTag != "n" {
				t.Errorf("%s decoded as %+v", tt.params, v)
			}
			continue
		}
		wantInvalidParams(t, err, []string{tt.want})
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  *protocol.Error
		code int64
		msg  string
	}{
		{protocol.ServerNotAvailable("t1", "docs", "disabled by policy"), protocol.CodeServerNotAvailable,
			`MCP server "docs" not available in thread "t1": disabled by policy`},
		{protocol.ToolDenied("t1", "docs", "rm", "read-only thread"), protocol.CodeToolDenied,
			`tool "rm" of MCP server "docs" denied by policy: read-only thread`},
		{protocol.NotInitialized(), protocol.CodeNotInitialized, "not initialized: send initialize first"},
		{protocol.NotSupported("OAuth login"), protocol.CodeNotSupported, "OAuth login is not supported by this host"},
		{protocol.InvalidRequest("empty batch"), protocol.CodeInvalidRequest, "invalid request: empty batch"},
		{protocol.MethodNotFound("turn/start"), protocol.CodeMethodNotFound, `method not found: "turn/start"`},
	}
	for _, tt := range tests {
		if tt.err.Code != tt.code || tt.err.Message != tt.msg {
			t.Errorf("got %d %q, want %d %q", tt.err.Code, tt.err.Message, tt.code, tt.msg)
		}
	}
	req := protocol.Request{Method: "initialized"}
	if !req.IsNotification() {
		t.Error("a request without an id is a notification")
	}
}
