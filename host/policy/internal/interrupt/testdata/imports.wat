;; A module that imports globals among other things and defines its own: the
;; flag's index is 2 imported + 2 defined = 4. The imports come from env.wat.
(module
  (import "env" "f" (func $f (param i32) (result i32)))
  (import "env" "g0" (global $g0 i32))
  (import "env" "mem" (memory 1))
  (import "env" "tab" (table 2 funcref))
  (import "env" "g1" (global $g1 (mut i64)))
  (global $d0 (mut i32) (global.get $g0))
  (global $d1 f64 (f64.const 1.5))
  (func (export "use") (param $x i32) (result i32)
    (global.set $d0 (i32.add (global.get $d0) (call $f (local.get $x))))
    (global.set $g1 (i64.add (global.get $g1) (i64.const 1)))
    (i32.store (i32.const 0) (global.get $d0))
    (global.get $d0))
  (func (export "d0") (result i32) (global.get $d0))
  (func (export "d1") (result f64) (global.get $d1))
)
