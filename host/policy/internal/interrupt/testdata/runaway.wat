;; Guests that never return on their own. Each export first calls the host
;; function test.started, so that the test sets the interrupt flag only once
;; the guest is past its own entry check.
(module
  (import "test" "started" (func $started))

  ;; spin loops forever: only the loop-header check can stop it.
  (func (export "spin")
    (call $started)
    (loop $l
      (br $l)))

  ;; spin_if loops forever through a br_if with a computed condition.
  (func (export "spin_if") (local $i i32)
    (call $started)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.ne (local.get $i) (i32.const 0x7fffffff)))
      (local.set $i (i32.const 0))
      (br $l)))

  ;; exp(60) makes 2^61 calls, 60 deep, and has no loop at all: only the
  ;; function-entry check can stop it.
  (func $exp (param $n i64) (result i64)
    (if (result i64) (i64.eqz (local.get $n))
      (then (i64.const 0))
      (else
        (i64.add
          (call $exp (i64.sub (local.get $n) (i64.const 1)))
          (call $exp (i64.sub (local.get $n) (i64.const 1)))))))
  (func (export "exp") (result i64)
    (call $started)
    (call $exp (i64.const 60)))

  ;; exp_indirect is exp through call_indirect.
  (type $t (func (param i64) (result i64)))
  (table 1 funcref)
  (elem (i32.const 0) $exp_ind)
  (func $exp_ind (param $n i64) (result i64)
    (if (result i64) (i64.eqz (local.get $n))
      (then (i64.const 0))
      (else
        (i64.add
          (call_indirect (type $t) (i64.sub (local.get $n) (i64.const 1)) (i32.const 0))
          (call_indirect (type $t) (i64.sub (local.get $n) (i64.const 1)) (i32.const 0))))))
  (func (export "exp_indirect") (result i64)
    (call $started)
    (call_indirect (type $t) (i64.const 60) (i32.const 0)))

  ;; finite returns 0 after a short loop: with the flag at 0 the checks
  ;; change nothing.
  (func (export "finite") (result i32) (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1000))))
    (local.get $i))
)
