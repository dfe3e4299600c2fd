package decision

import "github.com/warden-mcp/warden/abi"

// Wants reports whether any policy that would run for a server of plugin pluginID ("" for
// none) implements hook, so that a caller can skip building a hook's input (encoding a tool
// result) that nobody reads.
func (e *Engine) Wants(hook abi.Hook, pluginID string) bool {
	return e.set.Load().anyHook(pluginID, hook)
}
