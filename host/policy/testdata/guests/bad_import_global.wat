;; Rejected at load: imports a global (only functions may be imported).
(module
  (import "env" "g" (global $g i32))
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
