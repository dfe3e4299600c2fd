;; Rejected at load: warden_alloc has the wrong signature ((i64)->i32).
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i64) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
