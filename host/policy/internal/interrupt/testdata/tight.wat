;; The worst case for the checks' cost: a loop that does almost nothing else.
(module
  (func (export "count") (param $n i32) (result i32) (local $i i32) (local $s i32)
    (loop $l
      (local.set $s (i32.add (local.get $s) (i32.xor (local.get $i) (i32.const 0x55))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $s)))
