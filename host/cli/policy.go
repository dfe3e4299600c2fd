package cli

import (
	"context"
	"fmt"
)

func runPolicy(ctx context.Context, g *global, args []string) error {
	fmt.Fprintln(g.io.Stderr, "warden policy: not implemented yet")
	return errSilentFailure
}

// inspectPolicy loads a policy module and returns its hooks.
func inspectPolicy(ctx context.Context, g *global, id, path, sha string) ([]string, error) {
	return nil, nil
}
