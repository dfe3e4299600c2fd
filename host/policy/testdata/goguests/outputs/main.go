// Command outputs is a Go policy (built for wasip1 by the host/policy
// tests) that records decisions of every shape the SDK writes: through its
// fast path and its general encoder, strings that are views of the input,
// constants, and heap strings that only the output refers to while the
// garbage collector runs. Under warden its outputs are gathered
// (docs/abi.md §7.1); TestGoGuestOutputs checks what the host reads.
package main

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/warden-mcp/warden/sdk"
)

func main() {}

// sink keeps the garbage of churn reachable until it is dropped.
var sink [][]byte

// heap makes a string on the heap: built at run time and stored in a
// package variable (so that it is not on the stack), which drop clears, so
// that only the output refers to it.
var held string

func heap(s string) string {
	held = strings.Clone(s)
	return held
}

func drop() { held = "" }

// churn collects garbage, then allocates and fills blocks of every small
// size class, so that memory freed since the last collection is reused
// and overwritten: a heap string the output referred to without keeping it
// alive would now hold 'Z's.
func churn() {
	runtime.GC()
	for size := 8; size <= 512; size += 8 {
		for range 64 {
			b := make([]byte, size)
			for i := range b {
				b[i] = 'Z'
			}
			sink = append(sink, b)
		}
	}
	sink = sink[:0]
}

func init() {
	sdk.Servers(func(in sdk.ServersInput, out *sdk.ServersOutput) {
		servers := in.Servers()
		for i := 0; i < servers.Len(); i++ {
			s := servers.At(i)
			out.Hide(s.Name(), "input view ", s.Name()) // fast path: views and a constant
		}
		out.Expose("plain")                                                     // no reason
		out.Disable(strings.Repeat("n", 200), "long name")                      // general: name of 128 bytes or more
		out.Disable("five", "a", "b", "c", "d", "e")                            // general: more than three parts
		out.Disable("long-reason", strings.Repeat("r", 130))                    // general: reason of 128 bytes or more
		out.AllowTools("tools", "echo", "add")                                  // general: tool lists
		out.Disable("heap", "built ", heap(strconv.Itoa(12345)+" at run time")) // a heap string
		drop()
		churn()
	})
	sdk.Credentials(func(in sdk.CredentialsInput, out *sdk.CredentialsOutput) {
		out.Deny(0, "secret")
		out.Executor(1, "route ", heap(strconv.Itoa(7)+" via heap"))
		drop()
		out.Local(2)
		out.Deny(200, "index of 128 or more") // general
		churn()
	})
}
