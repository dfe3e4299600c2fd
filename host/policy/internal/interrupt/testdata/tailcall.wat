;; A loop made of tail calls (wazero: experimental.CoreFeaturesTailCall).
;; There is no loop instruction and the stack does not grow: only the
;; function-entry check can stop "tail".
(module
  (import "test" "started" (func $started))
  (func $next (param $n i64) (result i64)
    (return_call $next (i64.add (local.get $n) (i64.const 1))))
  (func (export "tail") (result i64)
    (call $started)
    (return_call $next (i64.const 0)))

  ;; sum(n) = n + (n-1) + ... + 0 through return_call_indirect, for the
  ;; equivalence test.
  (type $acc (func (param i64 i64) (result i64)))
  (table 1 funcref)
  (elem (i32.const 0) $sum_acc)
  (func $sum_acc (param $n i64) (param $acc i64) (result i64)
    (if (result i64) (i64.eqz (local.get $n))
      (then (local.get $acc))
      (else
        (return_call_indirect (type $acc)
          (i64.sub (local.get $n) (i64.const 1))
          (i64.add (local.get $acc) (local.get $n))
          (i32.const 0)))))
  (func (export "sum") (param $n i32) (result i64)
    (return_call $sum_acc (i64.extend_i32_u (i32.and (local.get $n) (i32.const 0xffff))) (i64.const 0)))
)
