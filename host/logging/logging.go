// Package logging builds warden's hclog loggers: one root logger per process, text by
// default or JSON lines, with a named sub-logger per component and per plugin.
//
//	log := logging.New(logging.Options{JSON: true, Level: "debug", Output: os.Stderr})
//	roots := log.Named("roots")
//	roots.Named("demo@1").Warn("plugin reloaded", "path", dir)
package logging

import (
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
)

// Options configures New. The zero value logs text at info level to os.Stderr.
type Options struct {
	// JSON selects JSON-lines output; false (default) selects hclog's text format.
	JSON bool
	// Level is one of trace, debug, info, warn, error, off; "" means info.
	Level string
	// Output receives the log; nil means os.Stderr.
	Output io.Writer
	// Name is the root logger's name; "" means "warden".
	Name string
}

// New returns the root logger for a warden process.
func New(o Options) hclog.Logger {
	out := o.Output
	if out == nil {
		out = os.Stderr
	}
	name := o.Name
	if name == "" {
		name = "warden"
	}
	level := hclog.Info
	if o.Level != "" {
		level = hclog.LevelFromString(o.Level)
		if level == hclog.NoLevel {
			level = hclog.Info
		}
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      level,
		Output:     out,
		JSONFormat: o.JSON,
		// Color stays off: logs go to files and pipes as often as to terminals.
		Color: hclog.ColorOff,
	})
}

// ValidLevel reports whether s names an hclog level New understands.
func ValidLevel(s string) bool {
	return s == "" || hclog.LevelFromString(s) != hclog.NoLevel
}
