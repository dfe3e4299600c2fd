;; Functions that must compute the same results with and without
;; instrumentation. Every export is (param i32) (result i64) so that the test
;; can call them all alike; the test also compares the memory afterwards.
(module
  (memory (export "memory") 1 2)
  (global $g (mut i64) (i64.const 5))
  (global $k i32 (i32.const 3))
  (table $tab 4 8 funcref)
  (table $ext 2 externref)
  (type $binop (func (param i64 i64) (result i64)))
  (func $add (type $binop) (i64.add (local.get 0) (local.get 1)))
  (func $mul (type $binop) (i64.mul (local.get 0) (local.get 1)))
  (elem (table $tab) (i32.const 0) func $add $mul)
  (elem $passive func $mul $add)
  (elem declare func $sub)
  (func $sub (type $binop) (i64.sub (local.get 0) (local.get 1)))
  (data $d0 (i32.const 16) "hello, world")
  (data $passive "\01\02\03\04\05\06\07\08")

  ;; Nested loops, br_if, and a loop inside an if.
  (func (export "loops") (param $x i32) (result i64) (local $i i32) (local $j i32) (local $s i64)
    (loop $outer
      (local.set $j (i32.const 0))
      (loop $inner
        (local.set $s (i64.add (local.get $s)
          (i64.extend_i32_u (i32.mul (local.get $i) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $j) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $i) (i32.add (local.get $x) (i32.const 10)))))
    (if (i32.and (local.get $x) (i32.const 1))
      (then
        (loop $odd
          (local.set $s (i64.add (local.get $s) (i64.const 3)))
          (local.set $x (i32.sub (local.get $x) (i32.const 1)))
          (br_if $odd (i32.gt_s (local.get $x) (i32.const 0))))))
    (local.get $s))

  ;; br_table dispatch inside a loop.
  (func (export "br_table") (param $x i32) (result i64) (local $acc i64) (local $n i32)
    (local.set $n (i32.const 20))
    (loop $again
      (block $d
        (block $c
          (block $b
            (block $a
              (br_table $a $b $c $d (i32.rem_u (i32.add (local.get $x) (local.get $n)) (i32.const 5))))
            (local.set $acc (i64.add (local.get $acc) (i64.const 1)))
            (br $d))
          (local.set $acc (i64.mul (local.get $acc) (i64.const 3)))
          (br $d))
        (local.set $acc (i64.sub (local.get $acc) (i64.const 7))))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $again (local.get $n)))
    (local.get $acc))

  ;; Blocks and loops with values: multi-value block types, a loop with a
  ;; parameter, if with results.
  (func (export "blocks") (param $x i32) (result i64)
    (block (result i64 i64)
      (i64.const 7)
      (i64.extend_i32_s (local.get $x)))
    (i64.mul)
    (i64.const 1)
    (loop (param i64 i64) (result i64)
      ;; stack: a b -> keep multiplying b by 2 while b < a
      (local.set $x (i32.add (local.get $x) (i32.const 1)))
      (i64.const 2)
      (i64.mul)
      (block (param i64 i64) (result i64 i64)
        (nop))
      (if (param i64 i64) (result i64) (i32.lt_u (local.get $x) (i32.const 40))
        (then (i64.add) (i64.const 1) (br 1))
        (else (i64.sub))))
    (if (result i64) (i32.gt_u (local.get $x) (i32.const 100))
      (then (i64.const -1))
      (else (i64.const 1)))
    (i64.add))

  ;; Loads and stores of every width, memory.size and memory.grow, offsets
  ;; and alignments.
  (func (export "mem") (param $x i32) (result i64) (local $p i32)
    (local.set $p (i32.and (i32.mul (local.get $x) (i32.const 8)) (i32.const 0xfff)))
    (i32.store offset=1024 align=4 (local.get $p) (i32.const 0x11223344))
    (i64.store offset=1032 (local.get $p) (i64.const 0x0102030405060708))
    (f32.store offset=1040 (local.get $p) (f32.const 1.5))
    (f64.store offset=1048 (local.get $p) (f64.const -2.25))
    (i32.store8 offset=1056 (local.get $p) (i32.const 0xfe))
    (i32.store16 offset=1058 (local.get $p) (i32.const 0xfedc))
    (i64.store8 offset=1060 (local.get $p) (i64.const 0x80))
    (i64.store16 offset=1062 (local.get $p) (i64.const 0x8001))
    (i64.store32 offset=1064 (local.get $p) (i64.const 0x80000001))
    (i64.add
      (i64.add
        (i64.add (i64.extend_i32_u (i32.load offset=1024 (local.get $p)))
                 (i64.load offset=1032 align=1 (local.get $p)))
        (i64.add (i64.trunc_f32_s (f32.load offset=1040 (local.get $p)))
                 (i64.trunc_f64_s (f64.load offset=1048 (local.get $p)))))
      (i64.add
        (i64.add
          (i64.add (i64.extend_i32_s (i32.load8_s offset=1056 (local.get $p)))
                   (i64.extend_i32_u (i32.load8_u offset=1056 (local.get $p))))
          (i64.add (i64.extend_i32_s (i32.load16_s offset=1058 (local.get $p)))
                   (i64.extend_i32_u (i32.load16_u offset=1058 (local.get $p)))))
        (i64.add
          (i64.add (i64.load8_s offset=1060 (local.get $p))
                   (i64.add (i64.load16_s offset=1062 (local.get $p)) (i64.load16_u offset=1062 (local.get $p))))
          (i64.add (i64.add (i64.load32_s offset=1064 (local.get $p)) (i64.load32_u offset=1064 (local.get $p)))
                   (i64.add (i64.extend_i32_u (memory.size))
                            (i64.extend_i32_s (memory.grow (i32.and (local.get $x) (i32.const 0))))))))))

  ;; SIMD: v128.const, i8x16.shuffle, lanes, load_lane/store_lane, loads
  ;; with memargs, a two-byte sub-opcode (i16x8.abs is 0xfd 0x80 0x01).
  (func (export "simd") (param $x i32) (result i64) (local $v v128)
    (local.set $v (v128.const i32x4 1 2 3 4))
    (local.set $v (i32x4.replace_lane 2 (local.get $v) (local.get $x)))
    (local.set $v (i8x16.shuffle 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1 0 (local.get $v) (v128.const i64x2 -1 0x1234)))
    (v128.store offset=2048 (i32.const 0) (local.get $v))
    (local.set $v (v128.load32_lane offset=2048 1 (i32.const 4) (local.get $v)))
    (local.set $v (v128.load8_lane 15 (i32.const 2050) (local.get $v)))
    (v128.store64_lane offset=2064 1 (i32.const 0) (local.get $v))
    (local.set $v (i16x8.abs (i16x8.sub (local.get $v) (v128.const i16x8 1 2 3 4 5 6 7 8))))
    (local.set $v (i32x4.add (local.get $v) (v128.load32_splat offset=2064 (i32.const 0))))
    (local.set $v (i64x2.mul (local.get $v) (v128.load64_zero (i32.const 2048))))
    (local.set $v (f32x4.demote_f64x2_zero (f64x2.convert_low_i32x4_s (local.get $v))))
    (local.set $v (i8x16.popcnt (local.get $v)))
    (i64.add
      (i64.add (i64x2.extract_lane 0 (local.get $v)) (i64x2.extract_lane 1 (local.get $v)))
      (i64.add
        (i64.extend_i32_s (i8x16.extract_lane_s 3 (local.get $v)))
        (i64.extend_i32_u (i32x4.bitmask (local.get $v))))))

  ;; Bulk memory: memory.fill, memory.copy, memory.init, data.drop; and
  ;; table.init, elem.drop, table.copy.
  (func (export "bulk") (param $x i32) (result i64)
    (memory.fill (i32.const 3000) (i32.add (local.get $x) (i32.const 0x41)) (i32.const 64))
    (memory.copy (i32.const 3100) (i32.const 16) (i32.const 12))
    (memory.init $passive (i32.const 3120) (i32.const 2) (i32.const 4))
    (table.init $tab $passive (i32.const 2) (i32.const 0) (i32.const 2))
    (table.copy $tab $tab (i32.const 0) (i32.const 2) (i32.const 1))
    (i64.add
      (i64.add (i64.load (i32.const 3000)) (i64.load (i32.const 3100)))
      (i64.add (i64.load (i32.const 3120))
               (call_indirect $tab (type $binop) (i64.const 6) (i64.const 7) (i32.const 0)))))
  (func (export "bulk_drop") (param $x i32) (result i64)
    (data.drop $passive)
    (elem.drop $passive)
    (i64.const 1))

  ;; Reference types: ref.null, ref.is_null, ref.func, table.get/set/size/
  ;; fill, typed select, call_indirect. (Not table.grow: Instrument rejects
  ;; it.)
  (func (export "refs") (param $x i32) (result i64) (local $f funcref) (local $e externref)
    (local.set $f (table.get $tab (i32.const 1)))
    (local.set $f (select (result funcref) (local.get $f) (ref.null func) (local.get $x)))
    (drop (ref.is_null (ref.func $sub)))
    (table.set $tab (i32.const 3) (local.get $f))
    (table.fill $ext (i32.const 0) (local.get $e) (i32.const 2))
    (i64.add
      (i64.add
        (i64.extend_i32_u (ref.is_null (table.get $tab (i32.const 3))))
        (i64.extend_i32_u (ref.is_null (table.get $ext (i32.const 1)))))
      (i64.add
        (i64.extend_i32_u (i32.add (table.size $tab) (table.size $ext)))
        (if (result i64) (ref.is_null (local.get $f))
          (then (i64.const 100))
          (else (call_indirect $tab (type $binop) (i64.const 50) (i64.const 8) (i32.const 3)))))))

  ;; Typed and untyped select, globals.
  (func (export "select") (param $x i32) (result i64)
    (global.set $g (i64.add (global.get $g) (i64.const 1)))
    (i64.add
      (select (result i64) (i64.const 10) (global.get $g) (local.get $x))
      (i64.extend_i32_u (select (global.get $k) (i32.const 4) (i32.eqz (local.get $x))))))

  ;; Sign extension and saturating truncation (0xfc 0x00–0x07).
  (func (export "signext") (param $x i32) (result i64)
    (i64.add
      (i64.add
        (i64.extend_i32_s (i32.extend8_s (i32.add (local.get $x) (i32.const 0x7f))))
        (i64.extend_i32_s (i32.extend16_s (i32.add (local.get $x) (i32.const 0x7fff)))))
      (i64.add
        (i64.add (i64.extend8_s (i64.const 0x80)) (i64.extend16_s (i64.const 0x8000)))
        (i64.add (i64.extend32_s (i64.const 0x80000000))
          (i64.add (i64.trunc_sat_f64_s (f64.const 1e300))
                   (i64.extend_i32_u (i32.trunc_sat_f32_u (f32.const -5))))))))

  ;; Constants whose LEB128 encodings take the full 5 and 10 bytes.
  (func (export "consts") (param $x i32) (result i64)
    (i64.xor
      (i64.xor
        (i64.add (i64.const 0x7fffffffffffffff) (i64.const -0x8000000000000000))
        (i64.add (i64.const 0x4000000000000000) (i64.const -0x4000000000000001)))
      (i64.xor
        (i64.extend_i32_s (i32.add (i32.const -2147483648) (i32.const 2147483647)))
        (i64.add
          (i64.reinterpret_f64 (f64.const -0x1.fffffffffffffp+1023))
          (i64.extend_i32_u (i32.reinterpret_f32 (f32.const nan:0x7fffff)))))))

  ;; Recursion and unreachable code after br.
  (func $fib (param $n i32) (result i64)
    (if (result i64) (i32.lt_u (local.get $n) (i32.const 2))
      (then (i64.extend_i32_u (local.get $n)))
      (else
        (i64.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                 (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "fib") (param $x i32) (result i64)
    (block $out (result i64)
      (br $out (call $fib (i32.and (local.get $x) (i32.const 15))))
      (loop $dead (br $dead))
      (unreachable)))
)
