;; Probes the WASI sandbox. tool_call returns "sbx:" and 52 bytes at offset
;; 256 (the prefix keeps the first byte from being 0x00, which would make
;; the host read the output as a gathered one, docs/abi.md §7.1):
;;    0  u64  clock_time_get(realtime)
;;    8  u64  clock_time_get(monotonic)
;;   16  16 random bytes (random_get)
;;   32  u32  environment variable count, 36 u32 environment size
;;   40  u32  argument count,            44 u32 argument size
;;   48  u32  errno of fd_prestat_get(3) (8 = EBADF: no preopened directory)
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $env (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $prestat (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 252) "sbx:")
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 65536))
  (func (export "warden_tool_call") (param i32 i32) (result i64)
    (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 256)))
    (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 264)))
    (drop (call $random (i32.const 272) (i32.const 16)))
    (drop (call $env (i32.const 288) (i32.const 292)))
    (drop (call $args (i32.const 296) (i32.const 300)))
    (i32.store (i32.const 304) (call $prestat (i32.const 3) (i32.const 512)))
    (i64.or (i64.shl (i64.const 252) (i64.const 32)) (i64.const 56)))
)
