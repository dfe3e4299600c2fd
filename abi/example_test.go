package abi_test

import (
	"fmt"

	"github.com/warden-mcp/warden/abi"
)

// The host encodes an input, the guest decodes it without copying, decides,
// and encodes its output into a reused buffer.
func Example() {
	in := abi.ServersInput{
		Thread:  abi.Thread{ID: "t1", Kind: "reviewer"},
		Servers: []abi.Server{{Name: "docs", Transport: "http", URL: "https://docs.example.com/mcp"}, {Name: "fs", Transport: "stdio", Command: "npx"}},
	}
	wire := in.AppendTo(nil) // host side

	var got abi.ServersInput // guest side: reuse this value across calls
	if err := got.Unmarshal(wire); err != nil {
		fmt.Println(err)
		return
	}
	var out abi.ServersOutput
	for _, s := range got.Servers {
		if got.Thread.Kind == "reviewer" && s.Transport == "stdio" {
			out.Decisions = append(out.Decisions, abi.ServerDecision{Name: s.Name, Action: abi.ServerHide, Reason: "no stdio for reviewers"})
		}
	}
	buf := out.AppendTo(make([]byte, 0, 256))

	var decided abi.ServersOutput // host side again
	if err := decided.Unmarshal(buf); err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range decided.Decisions {
		fmt.Println(d.Name, d.Action, d.Reason)
	}
	// Output:
	// fs hide no stdio for reviewers
}

// A small ServersOutput on the wire: one decision {name "fs", action HIDE}.
func ExampleServersOutput_AppendTo() {
	out := abi.ServersOutput{Decisions: []abi.ServerDecision{{Name: "fs", Action: abi.ServerHide}}}
	fmt.Printf("% x\n", out.AppendTo(nil))
	// Output:
	// 0a 06 0a 02 66 73 10 02
}

func ExampleServerAction_Max() {
	fmt.Println(abi.ServerExpose.Max(abi.ServerDisable))
	fmt.Println(abi.ServerHide.Max(abi.ServerDisable))
	fmt.Println(abi.CredentialExecutor.Max(abi.CredentialLocal))
	fmt.Println(abi.ToolCallDeny.MoreRestrictive(abi.ToolCallAllow))
	// Output:
	// disable
	// hide
	// executor
	// true
}

func ExampleDecodeError() {
	var s abi.Server
	err := s.Unmarshal([]byte{0x0a, 0x05, 'a'}) // name: length 5, one byte present
	fmt.Println(err)
	// Output:
	// abi: Server field 1 at byte 0: length past end of input
}
