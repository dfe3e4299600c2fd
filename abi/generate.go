package abi

// The message types, the flat layout's tables, writer, reader and views,
// the output codec, abitest's schema, the sdk's inline bodies, the C
// guest's layout header and the field tables of docs/abi.md are generated
// from one schema (internal/abigen/schema.go). `make check` fails when a
// generated file is stale.
//
//go:generate go run ./internal/abigen
