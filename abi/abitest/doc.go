// Package abitest builds realistic ABI inputs for tests and benchmarks
// across the repository (codec benchmarks, SDK allocation tests, host
// runtime benchmarks). It imports only the standard library and abi.
//
//	in := abitest.ServersInput20()
//	buf := in.AppendTo(nil) // encoded as the host would send it (flat)
//
// It also copies a view of a flat input into the Go struct (ServersFromView,
// ...), to check the views against Unmarshal.
package abitest
