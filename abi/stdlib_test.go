package abi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdlibOnly enforces that abi and sdk import nothing but the standard
// library (and each other), natively and for GOOS=wasip1, and that both
// build for wasip1.
func TestStdlibOnly(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/warden-mcp/warden/"
	allowed := []string{module + "abi", module + "sdk"}
	tests := []struct {
		name string
		env  []string
	}{
		{"native", nil},
		{"wasip1", []string{"GOOS=wasip1", "GOARCH=wasm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := append(os.Environ(), tc.env...)
			list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./abi/...", "./sdk/...")
			list.Dir, list.Env = root, env
			out, err := list.CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, pkg := range strings.Fields(string(out)) {
				ok := false
				for _, a := range allowed {
					if pkg == a || strings.HasPrefix(pkg, a+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("abi/sdk depend on non-stdlib package %s", pkg)
				}
			}
			build := exec.Command("go", "build", "./abi/...", "./sdk/...")
			build.Dir, build.Env = root, env
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
		})
	}
}
