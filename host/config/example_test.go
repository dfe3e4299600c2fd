package config_test

import (
	"errors"
	"fmt"

	"github.com/warden-mcp/warden/host/config"
)

// One broken server is reported with file, line and server; its valid siblings still load,
// and keys that only Codex uses are listed as ignored.
func ExampleParseConfig() {
	src := []byte(`model = "gpt-5"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]
env_vars = ["DOCS_TOKEN", { name = "REGION", source = "remote" }]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
cwd = "/srv"
bearer_token = "s3cret"

[mcp_servers.search]
url = "https://search.example.com/mcp"
bearer_token_env_var = "SEARCH_TOKEN"
startup_timeout_ms = 2500
`)
	cfg, err := config.ParseConfig("/etc/warden/config.toml", src, config.Origin{Kind: config.OriginHostConfig})
	for _, d := range cfg.Servers {
		fmt.Printf("%s %s %s (line %d, startup timeout %v)\n", d.Name, d.Transport(), d.Identity(), d.Pos.Line, d.StartupTimeout)
	}
	fmt.Println("ignored:", cfg.Ignored)
	fmt.Println(err)

	var first *config.Error
	if errors.As(err, &first) {
		fmt.Printf("first problem: server %q, key %q\n", first.Server, first.Key)
	}
	// Output:
	// docs stdio docs-mcp (line 3, startup timeout 0s)
	// search http https://search.example.com/mcp (line 13, startup timeout 2.5s)
	// ignored: [model]
	// /etc/warden/config.toml:10: mcp_servers.remote: key `cwd` is only valid for stdio servers, but this server has `url`
	// /etc/warden/config.toml:11: mcp_servers.remote: key `bearer_token` is not supported: do not put a token in config; put it in an environment variable and name that variable with `bearer_token_env_var`
	// first problem: server "remote", key "cwd"
}

// Requirements allow a server only when its name is listed and its identity matches.
func ExampleRequirements_Check() {
	req, _ := config.ParseRequirements("requirements.toml", []byte(`
[mcp_servers.node_repl.identity]
url = "http://executor-only.invalid/mcp"
`))
	for _, d := range []config.ServerDecl{
		{Name: "node_repl", URL: "http://executor-only.invalid/mcp"},
		{Name: "node_repl", URL: "http://elsewhere.invalid/mcp"},
		{Name: "policy_unlisted", URL: "http://executor-only.invalid/mcp"},
	} {
		if allowed, reason := req.Check(&d); allowed {
			fmt.Println(d.Name, "allowed")
		} else {
			fmt.Println(d.Name, reason)
		}
	}
	// Output:
	// node_repl allowed
	// node_repl blocked by requirements: identity url "http://elsewhere.invalid/mcp" does not match the required "http://executor-only.invalid/mcp"
	// policy_unlisted blocked by requirements: "policy_unlisted" is not listed
}
