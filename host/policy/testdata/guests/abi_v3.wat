;; Rejected at load: warden_abi_version returns 3, a version this host does
;; not implement.
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 3))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
