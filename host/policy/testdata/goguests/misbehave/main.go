// Command misbehave is a Go policy (built for wasip1 by the host/policy
// tests) whose servers hook misbehaves according to the thread id, to check
// how Go runtime failures surface through the host:
//
//	"panic"     the handler panics (the SDK recovers: a guest error)
//	"exit"      os.Exit(3)
//	"oom"       allocates 1 MiB blocks until the runtime runs out of memory
//	"bigalloc"  one 200 MiB allocation
//	"loop"      spins forever
//	"fail"      reports a failure through the SDK
//	"log"       logs through warden.log and prints to stdout and stderr
//
// Any other thread id gets no opinion.
package main

import (
	"fmt"
	"os"

	"github.com/warden-mcp/warden/sdk"
)

func main() {}

var sink [][]byte

func init() {
	sdk.Servers(func(in sdk.ServersInput, out *sdk.ServersOutput) {
		switch in.Thread().ID() {
		case "panic":
			panic("boom")
		case "exit":
			os.Exit(3)
		case "oom":
			for {
				sink = append(sink, make([]byte, 1<<20))
			}
		case "bigalloc":
			sink = append(sink, make([]byte, 200<<20))
		case "loop":
			for {
				sink = sink[:0]
			}
		case "fail":
			out.Fail("policy failed on purpose")
		case "log":
			sdk.Log(sdk.LogWarn, "hello from go")
			fmt.Println("to stdout")
			fmt.Fprintln(os.Stderr, "to stderr")
		}
	})
}
