;; A well-behaved policy written by hand, proving the ABI works without Go.
;; servers: always returns the same ServersOutput, hand-encoded below:
;;   ServersOutput{decisions: [ServerDecision{name: "fs", action: HIDE, reason: "wat says no"}]}
;;   0a 13                       field 1 (decisions), length 19
;;     0a 02 'f' 's'             field 1 (name) "fs"
;;     10 02                     field 2 (action) = 2 (HIDE)
;;     1a 0b "wat says no"       field 3 (reason), 11 bytes
(module
  (import "warden" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "\0a\13\0a\02fs\10\02\1a\0bwat says no")
  (data (i32.const 64) "hello from wat")

  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_hooks") (result i32) (i32.const 1))

  ;; One fixed input buffer at page 1 (64 KiB): enough for these tests.
  (func (export "warden_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 65536)) (then (return (i32.const 0))))
    (i32.const 65536))

  (func (export "warden_servers") (param $p i32) (param $n i32) (result i64)
    (call $log (i32.const 2) (i32.const 64) (i32.const 14))
    ;; (16 << 32) | 21
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 21)))
)
