;; Rejected at load: exports no hook.
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
)
