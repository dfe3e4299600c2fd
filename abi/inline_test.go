package abi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestViewsInline checks, for the wasm build, that the compiler can inline
// every exported method of the views (view.go and view_gen.go), and Flat's parse methods: a
// call that is not inlined costs an interrupt check in a wasm guest (see
// "Cost model" in doc.go). StringList.Contains, a loop, is the exception. The sdk checks that they also inline into a
// policy that imports only sdk (TestViewsInlineThroughSDK).
func TestViewsInline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds for wasm")
	}
	var decls []ast.Decl
	for _, name := range []string{"view.go", "view_gen.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	var want []string
	for _, d := range decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || !fn.Name.IsExported() || fn.Name.Name == "Contains" {
			continue
		}
		recv := fn.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			want = append(want, "(*"+star.X.(*ast.Ident).Name+")."+fn.Name.Name)
		} else {
			want = append(want, recv.(*ast.Ident).Name+"."+fn.Name.Name)
		}
	}
	if len(want) < 50 {
		t.Fatalf("found only %d methods in view.go and view_gen.go", len(want))
	}
	cmd := exec.Command("go", "build", "-gcflags=-m", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, m := range want {
		if !strings.Contains(string(out), "can inline "+m+"\n") && !strings.Contains(string(out), "can inline "+m+" ") {
			t.Errorf("%s does not inline in the wasm build", m)
		}
	}
}
