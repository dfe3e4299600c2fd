;; A test guest for the host's plumbing.
;;   tool_call:   returns its input unchanged (echo)
;;   servers:     returns one byte: how many times servers has run (to observe memoisation)
;;   credentials: returns 4 bytes: how many times warden_alloc has run (little endian)
;; warden_alloc keeps one buffer at 64 KiB and grows memory to fit it.
(module
  (memory (export "memory") 2)
  (global $calls (mut i32) (i32.const 0))
  (global $allocs (mut i32) (i32.const 0))

  (func (export "_initialize"))
  (func (export "warden_abi_version") (result i32) (i32.const 1))

  (func (export "warden_alloc") (param $n i32) (result i32)
    (local $need i32)
    (global.set $allocs (i32.add (global.get $allocs) (i32.const 1)))
    ;; pages needed for [65536, 65536+n)
    (local.set $need
      (i32.shr_u (i32.add (i32.add (i32.const 65536) (local.get $n)) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))

  (func (export "warden_tool_call") (param $p i32) (param $n i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $p)) (i64.const 32)) (i64.extend_i32_u (local.get $n))))

  (func (export "warden_servers") (param $p i32) (param $n i32) (result i64)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (i32.store8 (i32.const 0) (global.get $calls))
    (i64.const 1)) ;; (0 << 32) | 1

  (func (export "warden_credentials") (param $p i32) (param $n i32) (result i64)
    (i32.store (i32.const 8) (global.get $allocs))
    (i64.or (i64.shl (i64.const 8) (i64.const 32)) (i64.const 4)))
)
