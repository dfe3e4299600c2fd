package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The example items (--items): fixed names, so that tests and policies can refer to them.
const (
	// readmeURI is a plain resource; its text names the server.
	readmeURI = "docs://example/readme"
	// docsTemplate is a resource template over any path below file:///docs/ (reserved
	// expansion: the path may hold slashes); a read answers with the path it was given.
	docsTemplate = "file:///docs/{+path}"
	// greetPrompt takes a name argument and greets it.
	greetPrompt = "greet"
)

// addItems registers the example resources, resource template and prompt on s: enough for
// a gateway's tests and benchmarks to list, read and get them, with no state behind them.
func addItems(s *mcp.Server, name string) {
	s.AddResource(&mcp.Resource{URI: readmeURI, Name: "readme", MIMEType: "text/plain", Description: "The example server's readme."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "readme of " + name}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: docsTemplate, Name: "docs", MIMEType: "text/plain", Description: "A file below file:///docs/; its text is its path."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			path, ok := strings.CutPrefix(req.Params.URI, "file:///docs/")
			if !ok {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "file " + path}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: greetPrompt, Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			who := req.Params.Arguments["name"]
			if who == "" {
				return nil, fmt.Errorf("prompt %s: the name argument is required", greetPrompt)
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + who + "!"}}}}, nil
		})
}
