;; An adversarial policy. Its servers hook misbehaves according to the first
;; byte of the thread id of its input (a flat ServersInput, docs/abi.md §6:
;; the root record at offset 56 starts with the thread's (offset, count)
;; slot, and a Thread record starts with the id's (offset, length) slot), so
;; thread id "L..." selects mode 'L'. Any other byte, an empty id or an input
;; it cannot follow gets the good answer of good.wat.
;;   L  infinite loop                      M  memory bomb (grow until refused, then trap)
;;   B  one huge grow (1 GiB), then trap   T  unreachable
;;   X  proc_exit(3)                       G  output points at garbage bytes
;;   O  output pointer out of bounds       S  output of 2 MiB (over the cap)
;;   E  output with the error field set    W  log spam (1000 messages)
;;   R  stack overflow (unbounded recursion)
;; and gathered outputs (docs/abi.md §7.1):
;;   g  the good answer, gathered          h  a bad header
;;   r  a reference outside memory         l  a literal past the output's end
;;   k  a truncated chunk                  z  32 references of 64 KiB (over the cap)
;; warden_alloc refuses (returns 0) anything over 32 KiB.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "warden" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "\0a\13\0a\02fs\10\02\1a\0bwat says no")   ;; 21 bytes
  (data (i32.const 64) "\7a\04nope")                             ;; ServersOutput{error: "nope"}
  (data (i32.const 96) "\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff")      ;; 11 bytes of garbage
  (data (i32.const 128) "evil guest called")                     ;; 17 bytes
  ;; g: a literal of the good answer's first 6 bytes, a reference to its
  ;; other 15 (at 22)
  (data (i32.const 256) "\00\00\00\00" "\06\00\00\80\0a\13\0a\02fs\00\00" "\0f\00\00\00\16\00\00\00") ;; 24 bytes
  (data (i32.const 288) "\00\01\00\00")                                   ;; h: 4 bytes
  (data (i32.const 296) "\00\00\00\00" "\10\00\00\00\f0\ff\ff\ff")         ;; r: 12 bytes
  (data (i32.const 312) "\00\00\00\00" "\40\00\00\80\0a\00")               ;; l: 10 bytes
  (data (i32.const 328) "\00\00\00\00" "\05\00\00\00")                     ;; k: 8 bytes
  (data (i32.const 344) "\00\00\00\00" "\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00\00\00\01\00\00\00\00\00")                  ;; z: 260 bytes

  (func (export "warden_abi_version") (result i32) (i32.const 1))

  (func (export "warden_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 32768)) (then (return (i32.const 0))))
    (i32.const 65536))

  (func $recurse (param $x i32) (result i32)
    (i32.add (call $recurse (i32.add (local.get $x) (i32.const 1))) (i32.const 1)))

  (func (export "warden_servers") (param $p i32) (param $n i32) (result i64)
    (local $mode i32)
    (local $i i32)
    (local $thread i32)
    (local $id i32)
    ;; The thread record: the u32 at byte 56 (inside the input?).
    (if (i32.lt_u (local.get $n) (i32.const 64)) (then (return (call $good))))
    (local.set $thread (i32.load offset=56 (local.get $p)))
    (if (i32.gt_u (local.get $thread) (i32.sub (local.get $n) (i32.const 8))) (then (return (call $good))))
    ;; The id: (offset, length) at the start of the thread record.
    (local.set $id (i32.load (i32.add (local.get $p) (local.get $thread))))
    (if (i32.eqz (i32.load offset=4 (i32.add (local.get $p) (local.get $thread)))) (then (return (call $good))))
    (if (i32.ge_u (local.get $id) (local.get $n)) (then (return (call $good))))
    (local.set $mode (i32.load8_u (i32.add (local.get $p) (local.get $id))))
    (call $log (i32.const 3) (i32.const 128) (i32.const 17))

    (if (i32.eq (local.get $mode) (i32.const 0x4c)) ;; L
      (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $mode) (i32.const 0x4d)) ;; M
      (then
        (loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
        (unreachable)))
    (if (i32.eq (local.get $mode) (i32.const 0x42)) ;; B
      (then
        (if (i32.eq (memory.grow (i32.const 0x4000)) (i32.const -1)) (then (unreachable)))
        (return (call $good))))
    (if (i32.eq (local.get $mode) (i32.const 0x54)) ;; T
      (then (unreachable)))
    (if (i32.eq (local.get $mode) (i32.const 0x58)) ;; X
      (then (call $proc_exit (i32.const 3)) (unreachable)))
    (if (i32.eq (local.get $mode) (i32.const 0x47)) ;; G: (96 << 32) | 11
      (then (return (i64.or (i64.shl (i64.const 96) (i64.const 32)) (i64.const 11)))))
    (if (i32.eq (local.get $mode) (i32.const 0x4f)) ;; O: (0xffff0000 << 32) | 100
      (then (return (i64.const 0xffff000000000064))))
    (if (i32.eq (local.get $mode) (i32.const 0x53)) ;; S: (0 << 32) | 2097152
      (then (return (i64.const 2097152))))
    (if (i32.eq (local.get $mode) (i32.const 0x67)) ;; g: (256 << 32) | 24
      (then (return (i64.const 0x0000010000000018))))
    (if (i32.eq (local.get $mode) (i32.const 0x68)) ;; h: (288 << 32) | 4
      (then (return (i64.const 0x0000012000000004))))
    (if (i32.eq (local.get $mode) (i32.const 0x72)) ;; r: (296 << 32) | 12
      (then (return (i64.const 0x000001280000000c))))
    (if (i32.eq (local.get $mode) (i32.const 0x6c)) ;; l: (312 << 32) | 10
      (then (return (i64.const 0x000001380000000a))))
    (if (i32.eq (local.get $mode) (i32.const 0x6b)) ;; k: (328 << 32) | 8
      (then (return (i64.const 0x0000014800000008))))
    (if (i32.eq (local.get $mode) (i32.const 0x7a)) ;; z: (344 << 32) | 260
      (then (return (i64.const 0x0000015800000104))))
    (if (i32.eq (local.get $mode) (i32.const 0x45)) ;; E: (64 << 32) | 6
      (then (return (i64.or (i64.shl (i64.const 64) (i64.const 32)) (i64.const 6)))))
    (if (i32.eq (local.get $mode) (i32.const 0x57)) ;; W
      (then
        (loop $spam
          (call $log (i32.const 3) (i32.const 128) (i32.const 17))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $spam (i32.lt_u (local.get $i) (i32.const 1000))))))
    (if (i32.eq (local.get $mode) (i32.const 0x52)) ;; R
      (then (drop (call $recurse (i32.const 0)))))
    (call $good))

  (func $good (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 21)))
)
