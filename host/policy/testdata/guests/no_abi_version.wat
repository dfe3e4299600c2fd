;; Rejected at load: does not export warden_abi_version.
(module
  (memory (export "memory") 1)
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
