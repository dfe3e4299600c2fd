package cli

import (
	"context"
	"fmt"
)

func runDemo(ctx context.Context, g *global, args []string) error {
	fmt.Fprintln(g.io.Stderr, "warden demo: not implemented yet")
	return errSilentFailure
}
