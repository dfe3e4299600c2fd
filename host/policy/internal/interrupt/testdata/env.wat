;; The imports of imports.wat.
(module
  (func (export "f") (param i32) (result i32) (i32.mul (local.get 0) (i32.const 2)))
  (global (export "g0") i32 (i32.const 100))
  (memory (export "mem") 1)
  (table (export "tab") 2 funcref)
  (global (export "g1") (mut i64) (i64.const 0))
)
