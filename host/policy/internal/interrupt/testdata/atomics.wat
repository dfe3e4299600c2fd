;; Atomics (wazero: experimental.CoreFeaturesThreads), including
;; atomic.fence and its reserved byte.
(module
  (memory 1 1 shared)
  (func (export "atomics") (param $x i32) (result i64) (local $i i32)
    (atomic.fence)
    (i32.atomic.store (i32.const 64) (local.get $x))
    (loop $l
      (drop (i32.atomic.rmw.add (i32.const 64) (i32.const 3)))
      (drop (i64.atomic.rmw8.xor_u offset=8 (i32.const 64) (i64.const 0x5a)))
      (drop (i32.atomic.rmw.cmpxchg (i32.const 72) (i32.const 0) (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 10))))
    (i64.add
      (i64.extend_i32_u (i32.atomic.load (i32.const 64)))
      (i64.add (i64.atomic.load offset=8 (i32.const 64))
               (i64.extend_i32_u (memory.atomic.notify (i32.const 64) (i32.const 0))))))
)
