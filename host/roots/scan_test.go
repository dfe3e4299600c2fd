package roots

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScanScenario: a plugins dir holding one valid root, one with malformed JSON, one
// whose cwd escapes via .., one whose policy path is a symlink out of the root. The valid
// one is ok, the others each carry a precise error, and nothing else is affected.
func TestScanScenario(t *testing.T) {
	base := tempDir(t)
	plugins := filepath.Join(base, "plugins")
	out := filepath.Join(base, "outside")
	layout(t, base, out, map[string]string{
		"outside/evil.wasm": "\x00asm\x01\x00\x00\x00",

		"plugins/good/.codex-plugin/plugin.json": `{"name":"good","version":"1","policy":"./policy.wasm"}`,
		"plugins/good/.mcp.json":                 `{"mcpServers":{"demo":{"command":"./bin/demo","env_vars":["TOKEN"]}}}`,
		"plugins/good/policy.wasm":               "\x00asm\x01\x00\x00\x00",
		"plugins/good/bin/demo":                  "#!/bin/sh\n",

		"plugins/broken/.codex-plugin/plugin.json": "{\"name\": \"broken\",\n \"version\": 1.0.0}",
		"plugins/broken/.mcp.json":                 `{"a":{"command":"a"}}`,

		"plugins/escape/.codex-plugin/plugin.json": `{"name":"escape","version":"1"}`,
		"plugins/escape/.mcp.json":                 "{\"mcpServers\":{\n\"x\":{\"command\":\"x\",\"cwd\":\"../../etc\"}}}",

		"plugins/sneaky/.claude-plugin/plugin.json": `{"name":"sneaky","version":"0.1","policy":"policy.wasm"}`,
		"plugins/sneaky/.mcp.json":                  `{"s":{"url":"https://s.example/mcp"}}`,
		"plugins/sneaky/policy.wasm":                "link:{OUT}/evil.wasm",

		"plugins/README.md":          "not a root",
		"plugins/empty/notes.txt":    "a directory that is not a root",
		"plugins/.staging/.mcp.json": `{"hidden":{"command":"x"}}`,
	})

	set := Scan([]string{plugins}, Options{})
	if p := set.Problems(); len(p) != 0 {
		t.Fatalf("Problems = %v", p)
	}
	var ids []string
	for _, r := range set.Roots() {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"broken", "escape@1", "good@1", "sneaky@0.1"}, ids); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}

	good := set.Get("good@1")
	if good.Status != StatusOK || len(good.Servers) != 1 || good.Policy == nil || good.Err != nil {
		t.Errorf("good = %+v", good)
	}
	if set.ByDir(filepath.Join(plugins, "good")) != good {
		t.Errorf("ByDir(good) is not the good root")
	}

	want := map[string]string{
		"broken":     `plugin "broken": .codex-plugin/plugin.json:2:16: invalid character '.' after object key:value pair`,
		"escape@1":   `plugin "escape@1": none of its 1 server declarations is usable`,
		"sneaky@0.1": `plugin "sneaky@0.1": .claude-plugin/plugin.json: policy "policy.wasm" escapes the plugin root (it resolves to ` + out + `/evil.wasm)`,
	}
	for id, msg := range want {
		r := set.Get(id)
		if r.Status != StatusError || r.Err == nil || r.Err.Error() != msg {
			t.Errorf("%s: status %s, Err\n  %v\nwant\n  %s", id, r.Status, r.Err, msg)
		}
		if len(r.Servers) != 0 {
			t.Errorf("%s exposes servers", id)
		}
	}
	escape := set.Get("escape@1")
	if got := errStrings(escape.ServerErrors); !cmp.Equal(got, []string{`plugin "escape@1": .mcp.json:2: server "x": cwd "../../etc" escapes the plugin root`}) {
		t.Errorf("escape ServerErrors = %q", got)
	}
	if !errors.Is(escape.ServerErrors[0], ErrEscapesRoot) {
		t.Errorf("escape error is not ErrEscapesRoot")
	}
}

func TestScanDuplicateIDs(t *testing.T) {
	base := tempDir(t)
	layout(t, base, "", map[string]string{
		"a/one/.codex-plugin/plugin.json":  `{"name":"dup","version":"1"}`,
		"a/one/.mcp.json":                  `{"s":{"command":"s"}}`,
		"b/two/.claude-plugin/plugin.json": `{"name":"dup","version":"1"}`,
		"b/other/.mcp.json":                `{"s":{"command":"s"}}`,
	})
	one, two := filepath.Join(base, "a/one"), filepath.Join(base, "b/two")
	set := Scan([]string{filepath.Join(base, "a"), filepath.Join(base, "b")}, Options{})
	if set.Len() != 3 {
		t.Fatalf("Len = %d", set.Len())
	}
	for _, c := range []struct{ dir, other string }{{one, two}, {two, one}} {
		r := set.ByDir(c.dir)
		want := `plugin "dup@1": duplicate plugin id: also used by the root at ` + c.other
		if r.Status != StatusError || r.Err.Error() != want || !errors.Is(r.Err, ErrDuplicateID) || len(r.Servers) != 0 {
			t.Errorf("%s: status %s, Err %v", c.dir, r.Status, r.Err)
		}
	}
	if r := set.Get("dup@1"); r == nil || r.Dir != one {
		t.Errorf("Get(dup@1) = %+v", r)
	}
	if r := set.Get("other"); r == nil || r.Status != StatusOK {
		t.Errorf("the unrelated root is affected: %+v", r)
	}
}

func TestScanDirs(t *testing.T) {
	base := tempDir(t)
	layout(t, base, "", map[string]string{
		"real/p/.mcp.json":    `{"s":{"command":"s"}}`,
		"plugins/alias":       "link:{DIR}/real/p",
		"plugins/again":       "link:{DIR}/real/p",
		"plugins/dangling":    "link:{DIR}/nowhere",
		"plugins/file.mcp":    "x",
		"linked-plugins":      "link:{DIR}/plugins",
		"notadir":             "x",
		"plugins/q/.mcp.json": `{"t":{"command":"t"}}`,
	})
	missing := filepath.Join(base, "missing")
	set := Scan([]string{filepath.Join(base, "plugins"), filepath.Join(base, "linked-plugins"), missing, filepath.Join(base, "notadir")}, Options{})

	var got []string
	for _, r := range set.Roots() {
		got = append(got, r.ID+" "+strings.TrimPrefix(r.Dir, base))
	}
	// "again" and "alias" lead to the same directory (loaded once, under the first entry
	// name); the linked plugins dir is the same dir as plugins.
	if diff := cmp.Diff([]string{"again /real/p", "q /plugins/q"}, got); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
	probs := errStrings(set.Problems())
	wantProbs := []string{
		"plugins dir " + base + "/plugins: entry dangling: stat " + base + "/plugins/dangling: no such file or directory",
		"plugins dir " + missing + " does not exist: lstat " + missing + ": no such file or directory",
		"plugins dir " + base + "/notadir is not a directory",
	}
	if diff := cmp.Diff(wantProbs, probs); diff != "" {
		t.Errorf("Problems (-want +got):\n%s", diff)
	}
	if set.ByDir(filepath.Join(base, "plugins/alias")) == nil || set.ByDir(filepath.Join(base, "real/p")) == nil {
		t.Errorf("ByDir does not resolve links")
	}
	if set.Get("nope") != nil || set.ByDir(missing) != nil {
		t.Errorf("lookups of unknown roots are not nil")
	}

	// The same scan gives the same fingerprint; a change gives another.
	again := Scan([]string{filepath.Join(base, "plugins"), filepath.Join(base, "linked-plugins"), missing, filepath.Join(base, "notadir")}, Options{})
	if again.Fingerprint() != set.Fingerprint() {
		t.Errorf("fingerprint is not stable")
	}
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	third := Scan([]string{filepath.Join(base, "plugins"), filepath.Join(base, "linked-plugins"), missing, filepath.Join(base, "notadir")}, Options{})
	if third.Fingerprint() == set.Fingerprint() {
		t.Errorf("fingerprint did not change with the problems")
	}
}
