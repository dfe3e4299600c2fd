package cli

import (
	"fmt"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/frontdoor"
)

// toolNamesUsage documents --tool-names for `warden mcp` and `warden serve`.
const toolNamesUsage = "how the front door names tools and prompts, `prefixed|bare`: prefixed is server__tool; bare is the upstream name where no other server of the thread has it, so that a single-server thread looks exactly like that server (collisions stay server__tool). Default: [front_door] tool_names of config.toml, else prefixed"

// checkToolNames checks a --tool-names value ("" when the flag is not given) before
// anything starts, so that a bad value is a usage error.
func checkToolNames(flag string) error {
	switch flag {
	case "", config.ToolNamesPrefixed, config.ToolNamesBare:
		return nil
	}
	return fmt.Errorf("--tool-names %q: want %s", flag, config.ToolNamesWant)
}

// resolveToolNames picks the front door's naming: the --tool-names value when given, else
// the home config's `[front_door] tool_names` (cfg may be nil), else prefixed. The config
// value was validated by the loader; an invalid one never reaches here (the loader leaves
// it unset and reports it).
func resolveToolNames(flag string, cfg *config.Config) (frontdoor.ToolNames, error) {
	if err := checkToolNames(flag); err != nil {
		return frontdoor.ToolNamesPrefixed, err
	}
	v := flag
	if v == "" && cfg != nil {
		v = cfg.FrontDoor.ToolNames
	}
	switch v {
	case "", config.ToolNamesPrefixed:
		return frontdoor.ToolNamesPrefixed, nil
	case config.ToolNamesBare:
		return frontdoor.ToolNamesBare, nil
	}
	return frontdoor.ToolNamesPrefixed, fmt.Errorf("[front_door] tool_names %q: want %s", v, config.ToolNamesWant)
}

// homeConfig returns the config.toml the host loaded, or nil when it has none.
func homeConfig(h *host.Host) *config.Config {
	if home := h.Config(); home != nil {
		return home.Config
	}
	return nil
}
