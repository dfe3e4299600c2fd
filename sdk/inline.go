package sdk

// Inline bodies of the views, for policies.
//
// A policy uses the views through this package's aliases (sdk.ServersInput
// is abi.ServersView, ...) and usually does not import abi itself. The Go
// compiler (1.26) only inlines a function of another package if it has the
// function's body, and it reads bodies from the export data of the packages
// the compiled package imports: abi's bodies reach a policy only if sdk's
// export data carries them, which it does for the functions that sdk's own
// inlinable functions call (golang/go#74783). Without them every accessor
// would be a call, and in a wasm guest a call to a function with a branch
// costs an interrupt check (see "Performance" in doc.go). The functions
// below exist only to call every accessor once; TestViewsInlineThroughSDK
// checks that a policy importing only sdk inlines them.
//
// The functions, one per method of every view and list type in abi, are
// generated with abi (inline_gen.go): see abi/generate.go.
