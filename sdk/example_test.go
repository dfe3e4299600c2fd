package sdk_test

import (
	"fmt"

	"github.com/warden-mcp/warden/sdk"
)

func ExampleURLHost() {
	host := sdk.URLHost("https://user@Docs.Example.com:8443/mcp")
	fmt.Println(host, sdk.HostIn(host, "*.example.com"), sdk.HostIn(host, "example.com"))
	// Output:
	// Docs.Example.com true false
}

func ExampleHostSet() {
	allowed := sdk.NewHostSet("*.example.com", "127.0.0.1", "localhost")
	for _, host := range []string{"mcp0.example.com", "LOCALHOST.", "example.com", "browser.example.org"} {
		fmt.Println(host, allowed.Match(host))
	}
	// Output:
	// mcp0.example.com true
	// LOCALHOST. true
	// example.com false
	// browser.example.org false
}

func ExampleJSONStringField() {
	path, ok := sdk.JSONStringField([]byte(`{"path":"/etc/passwd","mode":"r"}`), "path")
	fmt.Println(path, ok)
	// Output:
	// /etc/passwd true
}
