package decision

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/policy"
)

// phaseFixture is a thread's policy phase with nPlugins selected plugins, each with its own
// Go policy module (the reviewer-no-stdio example, loaded under nPlugins ids) governing
// serversPer servers.
func phaseFixture(b *testing.B, nPlugins, serversPer int, memo bool) (*Engine, *abi.ServersInput, func()) {
	b.Helper()
	ctx := context.Background()
	wasm := testbuild.GoGuest(b, "../../examples/plugins/reviewer-no-stdio")
	memoEntries := -1
	if memo {
		memoEntries = 0 // default size
	}
	rt, err := policy.NewRuntime(ctx, policy.Config{MemoEntries: memoEntries, PoolSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	in := &abi.ServersInput{
		Thread:       abi.Thread{ID: "thr_bench", Kind: "reviewer"},
		Environments: []abi.Environment{{ID: "local", Local: true, Connected: true, Processes: true}},
	}
	plugins := map[string]Policy{}
	for p := 0; p < nPlugins; p++ {
		id := fmt.Sprintf("plugin-%02d@1", p)
		m, err := rt.Load(ctx, policy.LoadOptions{ID: id, Wasm: wasm})
		if err != nil {
			b.Fatal(err)
		}
		plugins[id] = m
		in.Thread.Roots = append(in.Thread.Roots, abi.Root{ID: id, Location: "local", Path: "/plugins/" + id})
		for s := 0; s < serversPer; s++ {
			srv := abi.Server{Name: fmt.Sprintf("p%02d_s%d", p, s), Origin: "plugin:" + id, PluginID: id, Environment: "local", Enabled: true}
			if s%2 == 0 {
				srv.Transport, srv.Command, srv.Args = "stdio", "/usr/bin/mcp-"+strconv.Itoa(s), []string{"--stdio"}
			} else {
				srv.Transport, srv.URL = "http", fmt.Sprintf("https://mcp%d.example.com/mcp", s)
				srv.Credentials = []abi.Credential{{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN_" + strconv.Itoa(s), Owner: "local"}}
			}
			in.Servers = append(in.Servers, srv)
		}
	}
	e := NewEngine(Options{})
	e.SetPolicies(nil, plugins)
	return e, in, func() { rt.Close(ctx) }
}

// BenchmarkPolicyPhase measures one thread's policy phase — baseline, then 20 plugin
// policies over 5 servers each — first time (every input new to the memo) and memoised
// (the same thread and servers again). The baseline-only phase over the same 100 servers is
// measured in the same run, and x-baseline reports the ratio. Goals: first
// ≤ 1 ms, memoised ≤ 0.2 ms.
func BenchmarkPolicyPhase(b *testing.B) {
	ctx := context.Background()
	// The baseline-only phase is timed by hand: testing.Benchmark cannot run inside a
	// benchmark (it waits for the benchmark lock the outer benchmark holds).
	baselineOnly := func() float64 {
		e, in, done := phaseFixture(b, 20, 5, true)
		defer done()
		e.SetPolicies(nil, nil)
		const n = 2000
		start := time.Now()
		for i := 0; i < n; i++ {
			e.Servers(ctx, in)
		}
		return float64(time.Since(start).Nanoseconds()) / n
	}()
	b.Run("first", func(b *testing.B) {
		e, in, done := phaseFixture(b, 20, 5, true)
		defer done()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// A new thread id makes every plugin's input new: no memo hit.
			in.Thread.ID = "thr_" + strconv.Itoa(i)
			checkPhase(b, e.Servers(ctx, in))
		}
		reportPhase(b, baselineOnly, 1000)
	})
	b.Run("memoised", func(b *testing.B) {
		e, in, done := phaseFixture(b, 20, 5, true)
		defer done()
		checkPhase(b, e.Servers(ctx, in)) // warm the memo
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			checkPhase(b, e.Servers(ctx, in))
		}
		reportPhase(b, baselineOnly, 200)
	})
}

func reportPhase(b *testing.B, baselineNs float64, goalUs float64) {
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp/1e3, "µs/phase")
	b.ReportMetric(goalUs, "goal-µs")
	b.ReportMetric(perOp/baselineNs, "x-baseline")
}

// checkPhase keeps the benchmark honest: the reviewer policy hides every stdio server.
func checkPhase(b *testing.B, vs []ServerVerdict) {
	hidden := 0
	for _, v := range vs {
		if v.Action == abi.ServerHide {
			hidden++
		}
	}
	if hidden != 60 {
		b.Fatalf("hidden = %d, want 60 (3 stdio servers in each of 20 plugins)", hidden)
	}
}
