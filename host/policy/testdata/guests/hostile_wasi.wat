;; A policy that attacks the host through WASI and warden.log. Its servers
;; hook reads the mode from the first input byte (the tests call it with raw
;; input bytes). Floods grow memory, lay out their arguments, then call one
;; host function in a loop forever; probes make one call and proc_exit with
;; the errno (or the count) it returned, so that the error text carries it.
;; Any other byte answers an empty output. Memory is 64 MiB from the start,
;; so that no call spends its deadline growing it.
;;   W  fd_write(1, iovs, 1_000_000, ...), each iovec covering all 64 MiB
;;   w  fd_write(1, iovs, 1024, ...), each iovec covering all 64 MiB
;;   e  the same on stderr
;;   R  random_get(0, all 64 MiB)
;;   P  poll_oneoff with 800_000 clock subscriptions
;;   r  fd_read(0, iovs, 8_388_607, ...) of empty iovecs
;;   O  path_open(3, ..., a path covering all 64 MiB, ...)
;;   L  warden.log(error, 0, all 64 MiB)
;; probes (exit code = errno, or the count where noted):
;;   1  fd_write with 1025 iovecs            2  fd_read with 1025 iovecs
;;   3  poll_oneoff with 65 subscriptions    4  fd_close(1)
;;   5  fd_write(1) of 1024 iovecs "hi\n": exit code = bytes written
;;   6  poll_oneoff with one clock subscription: exit code = 100 + events
;;   7  path_open(1, "x")                    8  path_open(3, a path past memory)
;;   9  fd_read(0) of 16 bytes: exit code = 100 + bytes read
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "warden" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1024)
  (data (i32.const 60000) "hi\0ax")

  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))

  ;; grow makes memory $pages pages and returns its size in bytes.
  (func $grow (param $pages i32) (result i32)
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
        (then (unreachable)))))
    (i32.mul (memory.size) (i32.const 65536)))

  ;; iovs writes $count iovecs {$off, $len} at $at.
  (func $iovs (param $at i32) (param $count i32) (param $off i32) (param $len i32)
    (local $i i32)
    (loop $l
      (i32.store (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 3))) (local.get $off))
      (i32.store offset=4 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 3))) (local.get $len))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $count)))))

  (func $exit (param $code i32) (call $proc_exit (local.get $code)) (unreachable))

  (func (export "warden_servers") (param $p i32) (param $n i32) (result i64)
    (local $mode i32)
    (local $size i32)
    (if (i32.eqz (local.get $n)) (then (return (i64.const 0))))
    (local.set $mode (i32.load8_u (local.get $p)))

    (if (i32.eq (local.get $mode) (i32.const 0x57)) ;; W
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (call $iovs (i32.const 0) (i32.const 1000000) (i32.const 0) (local.get $size))
        (loop $l (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1000000) (i32.const 8000000))) (br $l))))
    (if (i32.or (i32.eq (local.get $mode) (i32.const 0x77)) (i32.eq (local.get $mode) (i32.const 0x65))) ;; w, e
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (call $iovs (i32.const 0) (i32.const 1024) (i32.const 0) (local.get $size))
        (loop $l
          (drop (call $fd_write (select (i32.const 1) (i32.const 2) (i32.eq (local.get $mode) (i32.const 0x77)))
            (i32.const 0) (i32.const 1024) (i32.const 8192)))
          (br $l))))
    (if (i32.eq (local.get $mode) (i32.const 0x52)) ;; R
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (loop $l (drop (call $random_get (i32.const 0) (local.get $size))) (br $l))))
    (if (i32.eq (local.get $mode) (i32.const 0x50)) ;; P: zeroed memory = relative clock subscriptions of 0ns
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (loop $l
          (drop (call $poll_oneoff (i32.const 0) (i32.const 38400000) (i32.const 800000)
            (i32.sub (local.get $size) (i32.const 8))))
          (br $l))))
    (if (i32.eq (local.get $mode) (i32.const 0x72)) ;; r: zeroed memory = empty iovecs
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (loop $l
          (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.sub (i32.shr_u (local.get $size) (i32.const 3)) (i32.const 1))
            (i32.sub (local.get $size) (i32.const 4))))
          (br $l))))
    (if (i32.eq (local.get $mode) (i32.const 0x4f)) ;; O
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (loop $l
          (drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 0) (local.get $size)
            (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 0)))
          (br $l))))
    (if (i32.eq (local.get $mode) (i32.const 0x4c)) ;; L
      (then
        (local.set $size (call $grow (i32.const 1024)))
        (loop $l (call $log (i32.const 5) (i32.const 0) (local.get $size)) (br $l))))

    (if (i32.eq (local.get $mode) (i32.const 0x31)) ;; 1
      (then
        (call $iovs (i32.const 4096) (i32.const 1025) (i32.const 60000) (i32.const 3))
        (call $exit (call $fd_write (i32.const 1) (i32.const 4096) (i32.const 1025) (i32.const 32768)))))
    (if (i32.eq (local.get $mode) (i32.const 0x32)) ;; 2
      (then
        (call $iovs (i32.const 4096) (i32.const 1025) (i32.const 40000) (i32.const 3))
        (call $exit (call $fd_read (i32.const 0) (i32.const 4096) (i32.const 1025) (i32.const 32768)))))
    (if (i32.eq (local.get $mode) (i32.const 0x33)) ;; 3
      (then (call $exit (call $poll_oneoff (i32.const 4096) (i32.const 16384) (i32.const 65) (i32.const 32768)))))
    (if (i32.eq (local.get $mode) (i32.const 0x34)) ;; 4
      (then (call $exit (call $fd_close (i32.const 1)))))
    (if (i32.eq (local.get $mode) (i32.const 0x35)) ;; 5
      (then
        (call $iovs (i32.const 4096) (i32.const 1024) (i32.const 60000) (i32.const 3))
        (if (call $fd_write (i32.const 1) (i32.const 4096) (i32.const 1024) (i32.const 32768)) (then (unreachable)))
        (call $exit (i32.load (i32.const 32768)))))
    (if (i32.eq (local.get $mode) (i32.const 0x36)) ;; 6: subscription at 4096 (zeroed: relative clock, 0ns)
      (then
        (memory.fill (i32.const 4096) (i32.const 0) (i32.const 48))
        (i32.store (i32.const 32768) (i32.const 77))
        (if (call $poll_oneoff (i32.const 4096) (i32.const 16384) (i32.const 1) (i32.const 32768)) (then (unreachable)))
        (call $exit (i32.add (i32.const 100) (i32.load (i32.const 32768))))))
    (if (i32.eq (local.get $mode) (i32.const 0x37)) ;; 7
      (then (call $exit (call $path_open (i32.const 1) (i32.const 0) (i32.const 60003) (i32.const 1)
        (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 32768)))))
    (if (i32.eq (local.get $mode) (i32.const 0x38)) ;; 8
      (then (call $exit (call $path_open (i32.const 3) (i32.const 0) (i32.const 67108000) (i32.const 1000)
        (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 32768)))))
    (if (i32.eq (local.get $mode) (i32.const 0x39)) ;; 9
      (then
        (call $iovs (i32.const 4096) (i32.const 1) (i32.const 40000) (i32.const 16))
        (i32.store (i32.const 32768) (i32.const 77))
        (if (call $fd_read (i32.const 0) (i32.const 4096) (i32.const 1) (i32.const 32768)) (then (unreachable)))
        (call $exit (i32.add (i32.const 100) (i32.load (i32.const 32768))))))
    (i64.const 0))
)
