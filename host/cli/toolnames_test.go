package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/frontdoor"
)

// TestResolveToolNames pins the precedence of --tool-names over `[front_door] tool_names`
// over the prefixed default, and the usage error of a bad flag value.
func TestResolveToolNames(t *testing.T) {
	cfg := func(v string) *config.Config { return &config.Config{FrontDoor: config.FrontDoor{ToolNames: v}} }
	for _, tc := range []struct {
		flag    string
		cfg     *config.Config
		want    frontdoor.ToolNames
		wantErr string
	}{
		{flag: "", cfg: nil, want: frontdoor.ToolNamesPrefixed},
		{flag: "", cfg: cfg(""), want: frontdoor.ToolNamesPrefixed},
		{flag: "", cfg: cfg("prefixed"), want: frontdoor.ToolNamesPrefixed},
		{flag: "", cfg: cfg("bare"), want: frontdoor.ToolNamesBare},
		{flag: "bare", cfg: nil, want: frontdoor.ToolNamesBare},
		{flag: "bare", cfg: cfg("prefixed"), want: frontdoor.ToolNamesBare},
		{flag: "prefixed", cfg: cfg("bare"), want: frontdoor.ToolNamesPrefixed},
		{flag: "Bare", cfg: cfg("bare"), wantErr: `--tool-names "Bare": want "prefixed" or "bare"`},
		{flag: "short", cfg: nil, wantErr: `--tool-names "short": want "prefixed" or "bare"`},
		// A Config built by hand (not by the loader) with a bad value is refused, not guessed.
		{flag: "", cfg: cfg("full"), wantErr: `[front_door] tool_names "full": want "prefixed" or "bare"`},
	} {
		got, err := resolveToolNames(tc.flag, tc.cfg)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("flag %q cfg %+v: error %v, want %q", tc.flag, tc.cfg, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("flag %q cfg %+v: %v", tc.flag, tc.cfg, err)
		case got != tc.want:
			t.Errorf("flag %q cfg %+v: %v, want %v", tc.flag, tc.cfg, got, tc.want)
		}
	}
}

// TestMCPToolNames runs `warden mcp` in-process against a home with the example MCP server
// and lists its tools as an MCP client sees them: the flag and the config's [front_door]
// table decide between server__tool and bare names, and a bare name calls the tool.
func TestMCPToolNames(t *testing.T) {
	bin := mcpservertest.Build(t)
	for _, tc := range []struct {
		name      string
		frontDoor string // the [front_door] table, if any
		flags     []string
		bare      bool
	}{
		{name: "default"},
		{name: "config bare", frontDoor: "[front_door]\ntool_names = \"bare\"\n", bare: true},
		{name: "flag bare", flags: []string{"--tool-names", "bare"}, bare: true},
		{name: "flag overrides config", frontDoor: "[front_door]\ntool_names = \"bare\"\n", flags: []string{"--tool-names", "prefixed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			conf := fmt.Sprintf("[mcp_servers.ex]\ncommand = %q\n", bin) + tc.frontDoor
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, stderr, done := startMCP(t, ctx, home, tc.flags...)
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v\n%s", err, stderr)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			echo, other := "ex__echo", "echo"
			if tc.bare {
				echo, other = other, echo
			}
			if !slices.Contains(names, echo) || slices.Contains(names, other) {
				t.Fatalf("tools = %q, want %q and not %q", names, echo, other)
			}
			got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echo, Arguments: map[string]any{"text": "hi"}})
			if err != nil || got.IsError || len(got.Content) == 0 {
				t.Fatalf("call %s: %+v %v", echo, got, err)
			}
			if text, ok := got.Content[0].(*mcp.TextContent); !ok || !strings.Contains(text.Text, "hi") {
				t.Errorf("call %s: content %+v", echo, got.Content[0])
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if code := <-done; code != ExitOK {
				t.Errorf("warden mcp exited %d\n%s", code, stderr)
			}
		})
	}
}

// startMCP runs `warden --home HOME mcp FLAGS...` in-process on pipes and connects an MCP
// client to it. done receives the exit code after the client closes.
func startMCP(t *testing.T, ctx context.Context, home string, flags ...string) (*mcp.ClientSession, *syncBuffer, <-chan int) {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, append([]string{"--home", home, "--log-level", "warn", "mcp"}, flags...), IO{Stdin: stdinR, Stdout: stdoutW, Stderr: stderr})
		_ = stdoutW.Close()
		_ = stdinR.Close()
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolnames-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, nil)
	if err != nil {
		_ = stdinW.Close()
		t.Fatalf("connect: %v (exit %d)\n%s", err, <-done, stderr)
	}
	return cs, stderr, done
}
