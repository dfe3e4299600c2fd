package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File and variable names of a warden home.
const (
	// HomeEnvVar overrides the home directory.
	HomeEnvVar = "WARDEN_HOME"
	// ConfigFile, RequirementsFile and EnvironmentsFile are the files LoadHome reads.
	ConfigFile       = "config.toml"
	RequirementsFile = "requirements.toml"
	EnvironmentsFile = "environments.toml"
)

// Home is everything LoadHome reads from a warden home directory (the host's, or an
// executor's own).
type Home struct {
	// Dir is the home directory.
	Dir string
	// Config is config.toml with origin host-config (empty when the file is missing). Never nil.
	Config *Config
	// Requirements is requirements.toml; nil when the file is missing (allow all).
	Requirements *Requirements
	// Environments is environments.toml (DefaultEnvironments when missing). Never nil.
	Environments *Environments
}

// DefaultHome returns $WARDEN_HOME, else ~/.warden.
func DefaultHome() (string, error) {
	if dir := os.Getenv(HomeEnvVar); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("config: cannot find the warden home: set %s: %w", HomeEnvVar, err)
	}
	return filepath.Join(home, ".warden"), nil
}

// LoadHome loads config.toml (origin host-config), requirements.toml and environments.toml
// from dir. A missing file is not an error (an empty config, no requirements, local only).
// It also checks across files that every server's environment_id names an offered environment.
//
// The returned *Home is never nil and holds everything that is valid; the error, of type
// Errors, lists every problem in the three files.
func LoadHome(dir string) (*Home, error) {
	h := &Home{Dir: dir}
	var all Errors
	collect := func(err error) {
		var es Errors
		if errors.As(err, &es) {
			all = append(all, es...)
		} else if err != nil {
			all = append(all, &Error{File: dir, Msg: err.Error(), Err: err})
		}
	}

	cfgPath := filepath.Join(dir, ConfigFile)
	cfg, err := LoadConfig(cfgPath, Origin{Kind: OriginHostConfig})
	if errors.Is(err, fs.ErrNotExist) { // only a missing file wraps fs.ErrNotExist
		err = nil
	}
	collect(err)
	h.Config = cfg

	h.Requirements, err = LoadRequirements(filepath.Join(dir, RequirementsFile))
	collect(err)

	h.Environments, err = LoadEnvironments(filepath.Join(dir, EnvironmentsFile))
	collect(err)

	// Cross-file: a server routed to an environment that is not offered cannot run.
	kept := cfg.Servers[:0]
	for _, d := range cfg.Servers {
		if d.EnvironmentID != "" && !h.Environments.Has(d.EnvironmentID) {
			msg := fmt.Sprintf("`environment_id` %q names no environment in %s", d.EnvironmentID, EnvironmentsFile)
			if d.EnvironmentID == LocalEnvironment {
				msg = fmt.Sprintf("`environment_id` is %q, but %s sets `include_local = false`", LocalEnvironment, EnvironmentsFile)
			}
			all = append(all, &Error{File: cfg.File, Line: d.Pos.Line, Table: "mcp_servers." + quoteKey(d.Name),
				Server: d.Name, Key: "environment_id", Msg: msg})
			continue
		}
		kept = append(kept, d)
	}
	cfg.Servers = kept
	return h, all.asError()
}
