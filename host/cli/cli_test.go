package cli

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"warden": func() { os.Exit(Main(context.Background(), os.Args[1:], Stdio())) },
	})
}

// TestScripts runs the CLI end to end, in-process, from testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("WARDEN_HOME", env.WorkDir+"/home")
			return nil
		},
	})
}
