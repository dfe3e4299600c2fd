package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/policy"
	"github.com/warden-mcp/warden/host/policytest"
)

func runPolicy(ctx context.Context, g *global, args []string) error {
	return runSubcommand(ctx, g, "policy", args, []command{{name: "eval", run: policyEval}, {name: "test", run: policyTest}})
}

// newRuntime returns a policy runtime with an on-disk compilation cache, so a second
// `warden policy test` of the same module skips compilation.
func newRuntime(ctx context.Context, g *global) (*policy.Runtime, error) {
	cacheDir := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cacheDir = filepath.Join(dir, "warden", "wazero")
	}
	return policy.NewRuntime(ctx, policy.Config{
		CompilationCacheDir: cacheDir,
		Logger:              g.log.Named("policy"),
		// A CLI evaluates each input once: memoisation would only hide nothing.
		MemoEntries: -1,
		PoolSize:    1,
	})
}

func loadPolicy(ctx context.Context, g *global, rt *policy.Runtime, arg string, timeout time.Duration) (*policy.Module, policySource, error) {
	src, err := resolvePolicy(ctx, arg)
	if err != nil {
		return nil, src, err
	}
	m, err := rt.Load(ctx, policy.LoadOptions{ID: src.id, Path: src.wasm, Limits: policy.Limits{Timeout: timeout}})
	return m, src, err
}

func policyEval(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "policy eval", "--plugin DIR|FILE --hook servers|credentials|tool_call|resource_read|prompt_get|tool_result --input FILE")
	plugin := fl.String("plugin", "", "a plugin root, a policy .wasm, or a Go policy package (built for wasip1)")
	hookName := fl.String("hook", "servers", "the hook to call: servers, credentials, tool_call, resource_read, prompt_get or tool_result")
	input := fl.String("input", "", "the hook input in JSON form (- for stdin)")
	timeout := fl.Duration("timeout", time.Second, "per-call deadline")
	if _, err := parse(fl, args); err != nil {
		return err
	}
	if *plugin == "" || *input == "" {
		fl.Usage()
		return errUsage
	}
	hook, err := abi.ParseHook(*hookName)
	if err != nil {
		return fmt.Errorf("--hook %q: want servers, credentials, tool_call, resource_read, prompt_get or tool_result", *hookName)
	}
	var data []byte
	if *input == "-" {
		data, err = readAll(g)
	} else {
		data, err = os.ReadFile(*input)
	}
	if err != nil {
		return err
	}
	rt, err := newRuntime(ctx, g)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	m, _, err := loadPolicy(ctx, g, rt, *plugin, *timeout)
	if err != nil {
		return err
	}
	if !m.Hooks().Has(hook) {
		return fmt.Errorf("policy %s does not implement the %s hook (it implements %s)", m.ID(), hook, m.Hooks())
	}
	out, err := policytest.Eval(ctx, m, hook, data)
	if out != nil {
		if werr := writeJSON(g.io.Stdout, out); werr != nil {
			return werr
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	return nil
}

func readAll(g *global) ([]byte, error) {
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := g.io.Stdin.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			if err.Error() == "EOF" {
				return []byte(b.String()), nil
			}
			return nil, err
		}
	}
}

func policyTest(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "policy test", "DIR [--tests DIR] [--run REGEXP] [-v]")
	testsDir := fl.String("tests", "", "fixture directory (default DIR/tests)")
	run := fl.String("run", "", "run only cases whose name matches this regular expression")
	verbose := fl.Bool("v", false, "print every case, its latency and its decisions")
	timeout := fl.Duration("timeout", time.Second, "per-call deadline")
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fl.Usage()
		return errUsage
	}
	var filter *regexp.Regexp
	if *run != "" {
		if filter, err = regexp.Compile(*run); err != nil {
			return fmt.Errorf("--run: %w", err)
		}
	}
	rt, err := newRuntime(ctx, g)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	m, src, err := loadPolicy(ctx, g, rt, pos[0], *timeout)
	if err != nil {
		return err
	}
	dir := *testsDir
	if dir == "" {
		dir = filepath.Join(src.dir, "tests")
	}
	cases, err := policytest.LoadDir(dir)
	if err != nil {
		return err
	}
	w := g.io.Stdout
	passed, failed := 0, 0
	for _, c := range cases {
		if filter != nil && !filter.MatchString(c.Name) {
			continue
		}
		res := policytest.Run(ctx, m, c)
		rel, _ := filepath.Rel(dir, res.File)
		if res.Pass {
			passed++
			if *verbose {
				fmt.Fprintf(w, "PASS %s (%s, %s)\n", res.Name, rel, res.Latency.Round(time.Microsecond))
			}
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL %s (%s)\n", res.Name, rel)
		for _, p := range res.Problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed\n", m.ID(), passed, failed)
	if passed+failed == 0 {
		return fmt.Errorf("no case matched --run %q", *run)
	}
	if failed > 0 {
		return errSilentFailure
	}
	return nil
}

// inspectPolicy loads a policy module the way the host will (imports and exports validated,
// ABI version checked) and returns its hooks.
func inspectPolicy(ctx context.Context, g *global, id, path, sha string) ([]string, error) {
	if g.policyRT == nil {
		rt, err := newRuntime(ctx, g)
		if err != nil {
			return nil, err
		}
		g.policyRT = rt
	}
	m, err := g.policyRT.Load(ctx, policy.LoadOptions{ID: id, Path: path, SHA256: sha})
	if err != nil {
		return nil, err
	}
	defer m.Close(ctx)
	var hooks []string
	for _, h := range abi.Hooks() {
		if m.Hooks().Has(h) {
			hooks = append(hooks, h.String())
		}
	}
	return hooks, nil
}
