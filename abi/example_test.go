package abi_test

import (
	"fmt"

	"github.com/warden-mcp/warden/abi"
)

// The host encodes an input (flat layout); the guest reads it in place
// through views, decides, and encodes its output (protobuf wire) into a
// reused buffer; the host decodes the output.
func Example() {
	in := abi.ServersInput{
		Thread:  abi.Thread{ID: "t1", Kind: "reviewer"},
		Servers: []abi.Server{{Name: "docs", Transport: "http", URL: "https://docs.example.com/mcp"}, {Name: "fs", Transport: "stdio", Command: "npx"}},
	}
	wire := in.AppendTo(nil) // host side

	var flat abi.Flat // guest side: reuse this value across calls
	v, err := flat.Servers(wire)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out abi.ServersOutput
	for i, servers := 0, v.Servers(); i < servers.Len(); i++ {
		if s := servers.At(i); v.Thread().Kind() == "reviewer" && s.IsStdio() {
			out.Decisions = append(out.Decisions, abi.ServerDecision{Name: s.Name(), Action: abi.ServerHide, Reason: "no stdio for reviewers"})
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

// The worked example of docs/abi.md §6: a servers input for a reviewer
// thread "t1" with one enabled stdio server "fs" (command "npx").
func ExampleServersInput_AppendTo() {
	in := abi.ServersInput{
		Thread:  abi.Thread{ID: "t1", Kind: "reviewer"},
		Servers: []abi.Server{{Name: "fs", Transport: "stdio", Command: "npx", Enabled: true}},
	}
	b := in.AppendTo(nil)
	for i := 0; i < len(b); i += 16 {
		fmt.Printf("%04x  % x\n", i, b[i:min(i+16, len(b))])
	}
	// Output:
	// 0000  57 44 4e 46 01 00 00 00 01 00 00 00 38 00 00 00
	// 0010  09 00 00 00 28 00 00 00 20 00 00 00 30 00 00 00
	// 0020  18 00 00 00 20 00 00 00 10 00 00 00 68 00 00 00
	// 0030  28 00 00 00 18 00 00 00 60 00 00 00 01 00 00 00
	// 0040  00 00 00 00 00 00 00 00 78 00 00 00 01 00 00 00
	// 0050  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
	// 0060  e0 00 00 00 02 00 00 00 e2 00 00 00 08 00 00 00
	// 0070  00 00 00 00 00 00 00 00 ea 00 00 00 02 00 00 00
	// 0080  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
	// 0090  ec 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00
	// 00a0  f1 00 00 00 03 00 00 00 00 00 00 00 00 00 00 00
	// 00b0  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
	// 00c0  01 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00
	// 00d0  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
	// 00e0  74 31 72 65 76 69 65 77 65 72 66 73 73 74 64 69
	// 00f0  6f 6e 70 78
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

func ExampleInputError() {
	var in abi.ServersInput
	err := in.Unmarshal([]byte("WDNF\x02\x00\x00\x00")) // layout version 2
	fmt.Println(err)
	// Output:
	// abi: malformed ServersInput: header (at byte 8): unexpected end of input
}
