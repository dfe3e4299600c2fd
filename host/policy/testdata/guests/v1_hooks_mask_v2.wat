;; Rejected at load: a version 1 guest whose warden_hooks sets the bit of
;; resource_read (8), a hook of ABI version 2.
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_hooks") (result i32) (i32.const 9))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
