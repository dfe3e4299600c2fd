//go:build race

package policy

// raceEnabled reports whether the race detector is on: it makes wazero's
// Go-side stack growth (copying tens of MB) slow enough (~20s) that the
// stack-overflow guest is only run without it.
const raceEnabled = true
