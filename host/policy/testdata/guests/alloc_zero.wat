;; Rejected at load: warden_alloc returns 0 (out of memory) for the first buffer.
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 0))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
