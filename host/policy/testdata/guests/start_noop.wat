;; Rejected at load: a start section, even one that returns at once and
;; sits next to an _initialize (policies are reactors).
(module
  (memory (export "memory") 1)
  (func $nothing)
  (start $nothing)
  (func (export "_initialize"))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
