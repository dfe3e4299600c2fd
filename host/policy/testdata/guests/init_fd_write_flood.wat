;; Rejected at load: _initialize calls fd_write(1, iovs, 1_000_000, ...) in a
;; loop, each iovec covering all memory (stopped by InitTimeout).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 160)
  (func (export "_initialize")
    (local $i i32)
    (loop $fill
      (i32.store (i32.shl (local.get $i) (i32.const 3)) (i32.const 0))
      (i32.store offset=4 (i32.shl (local.get $i) (i32.const 3)) (i32.const 10485760))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 1000000))))
    (loop $l (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1000000) (i32.const 8000000))) (br $l)))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
