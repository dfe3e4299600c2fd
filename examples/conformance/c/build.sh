#!/bin/sh
# Builds the C conformance guest: a freestanding wasm32 module (no libc, no
# WASI) whose only import is warden.log. Needs clang and wasm-ld (lld); on
# Debian/Ubuntu `make tools` installs them.
#
#   ./build.sh [out.wasm]        (default: policy.wasm next to this script)
#
# Flags:
#   --target=wasm32            plain wasm32, no OS: nothing is imported implicitly
#   -ffreestanding -nostdlib   no libc headers beyond stdint.h, no crt, no libc
#   -mbulk-memory              __builtin_memmove becomes memory.copy, not a libc call
#   -Wl,--no-entry             a reactor: no _start (exports come from export_name)
#   -Wl,--stack-first          the stack below static data: an overflow traps instead of
#                              silently overwriting data
#   -Wl,--export-memory is wasm-ld's default; the memory is exported as "memory".
set -eu
out=${1:-$(dirname "$0")/policy.wasm}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")"
CC=${CC:-clang}
exec "$CC" --target=wasm32 -O2 -std=c11 -Wall -Wextra -Werror \
	-ffreestanding -nostdlib -mbulk-memory \
	-Wl,--no-entry -Wl,--stack-first -Wl,--strip-debug \
	-o "$out" policy.c
