;; Functions in the shape of the Go compiler's wasm output (see thread.go):
;; a dispatch loop over a chain of blocks, and jumps as
;; `i32.const K; local.set $pc; br $dispatch`. The comments say which
;; branches Instrument threads (a direct br to the segment's block) and
;; which it must leave alone; TestThreading counts them, TestEquivalence
;; runs every export instrumented and not.
(module
  ;; sum: forward jumps (threaded, one from inside an if), a backward jump
  ;; (not threaded), a loop bounded by min(n, 50).
  (func (export "sum") (param $n i32) (result i32)
    (local $pc i32) (local $i i32) (local $acc i32)
    loop $dispatch
      block $b3
        block $b2
          block $b1
            block $b0
              local.get $pc
              br_table $b0 $b1 $b2 $b3 $b3
            end
            ;; segment 0: start
            i32.const 1
            local.set $pc
            br $dispatch ;; threaded: forward to segment 1
          end
          ;; segment 1: the loop's test
          local.get $i
          local.get $n
          i32.const 50
          local.get $n
          i32.const 50
          i32.lt_u
          select
          i32.ge_u
          if
            i32.const 3
            local.set $pc
            br $dispatch ;; threaded: forward to segment 3, from inside an if
          end
          i32.const 2
          local.set $pc
          br $dispatch ;; threaded: forward to segment 2
        end
        ;; segment 2: the loop's body
        local.get $acc
        local.get $i
        local.get $i
        i32.mul
        i32.xor
        i32.const 1
        i32.rotl
        local.set $acc
        local.get $i
        i32.const 1
        i32.add
        local.set $i
        i32.const 1
        local.set $pc
        br $dispatch ;; not threaded: backward to segment 1
      end
      ;; segment 3: the result
      local.get $acc
      local.get $i
      i32.const 16
      i32.shl
      i32.xor
      return
    end
    unreachable)

  ;; resume: the entry segment is the parameter, as in Go (0xffffffff and
  ;; other large values take the default label); constants past the table
  ;; and negative ones take the default too.
  (func (export "resume") (param $pc i32) (result i32)
    (local $r i32)
    loop $dispatch
      block $b4
        block $b3
          block $b2
            block $b1
              block $b0
                local.get $pc
                br_table $b0 $b1 $b2 $b3 $b4
              end
              ;; segment 0
              local.get $r
              i32.const 1
              i32.or
              local.set $r
              i32.const 99
              local.set $pc
              br $dispatch ;; threaded: 99 is past the table, the default: segment 4
            end
            ;; segment 1
            local.get $r
            i32.const 2
            i32.or
            local.set $r
            i32.const -1
            local.set $pc
            br $dispatch ;; threaded: -1 is 0xffffffff, the default
          end
          ;; segment 2
          local.get $r
          i32.const 4
          i32.or
          local.set $r
          block $inner
            local.get $r
            i32.const 64
            i32.and
            br_if $inner
            i32.const 3
            local.set $pc
            br $dispatch ;; threaded: forward from inside a nested block
          end
          unreachable
        end
        ;; segment 3
        local.get $r
        i32.const 8
        i32.or
        local.set $r
        local.get $r
        i32.const 16
        i32.and
        if
          unreachable
        end
        local.get $r
        i32.const 16
        i32.or
        local.set $r
        i32.const 0
        local.set $pc
        br $dispatch ;; not threaded: backward (segment 0 then goes to 4)
      end
      ;; segment 4
      local.get $r
      i32.const 256
      i32.or
      return
    end
    unreachable)

  ;; lookalikes: branches to a dispatch loop that do not follow
  ;; `i32.const K; local.set $pc` exactly, which Instrument leaves alone.
  (func (export "lookalikes") (param $x i32) (result i32)
    (local $pc i32) (local $other i32) (local $n i32)
    loop $dispatch
      block $b4
        block $b3
          block $b2
            block $b1
              block $b0
                local.get $pc
                br_table $b0 $b1 $b2 $b3 $b4
              end
              ;; segment 0: a computed target (1 or 2)
              local.get $x
              i32.const 1
              i32.and
              i32.const 1
              i32.add
              local.set $pc
              br $dispatch ;; not threaded: the value is not a constant
            end
            ;; segment 1: the constant goes to another local
            local.get $n
            i32.const 1
            i32.add
            local.set $n
            i32.const 2
            local.set $pc
            i32.const 4
            local.set $other
            br $dispatch ;; not threaded: $other is not the dispatch's local
          end
          ;; segment 2: a br_if, then a nop in the pattern
          local.get $n
          i32.const 10
          i32.add
          local.set $n
          local.get $n
          i32.const 100
          i32.lt_u
          br_if $dispatch ;; not threaded: br_if ($pc is 2: this loops)
          i32.const 3
          local.set $pc
          nop
          br $dispatch ;; not threaded: a nop between local.set and br
        end
        ;; segment 3: local.tee
        local.get $n
        local.get $other
        i32.add
        local.set $n
        i32.const 4
        local.tee $pc
        drop
        br $dispatch ;; not threaded: local.tee, not local.set
      end
      ;; segment 4
      local.get $n
      return
    end
    unreachable)

  ;; typed: a chain broken by a typed block, and a br_table naming the
  ;; loop itself, are not dispatch loops.
  (func (export "typed") (param $x i32) (result i32)
    (local $pc i32) (local $n i32)
    loop $d1
      block $a1
        block (result i32)
          i32.const 7
          local.get $pc
          br_table 0 0
        end
        local.get $n
        i32.add
        local.set $n
        local.get $pc
        br_if $a1
        i32.const 1
        local.set $pc
        br $d1 ;; not threaded: no dispatch (a block of the chain has a type)
      end
    end
    i32.const 1
    local.set $pc
    loop $d2
      block $a2
        local.get $pc
        br_table $d2 $a2
      end
      local.get $n
      i32.const 1
      i32.add
      local.set $n
      local.get $n
      i32.const 30
      i32.lt_u
      if
        i32.const 5
        local.set $pc
        br $d2 ;; not threaded: a label names the loop
      end
    end
    local.get $n
    local.get $x
    i32.add)

  ;; twice: two dispatch loops one after the other, the second inside a
  ;; block; each is found. The first one's blocks are closed when the
  ;; second runs.
  (func (export "twice") (param $x i32) (result i32)
    (local $pc i32) (local $r i32)
    loop $first
      block $f1
        block $f0
          local.get $pc
          br_table $f0 $f1
        end
        local.get $r
        local.get $x
        i32.add
        local.set $r
        i32.const 1
        local.set $pc
        br $first ;; threaded
      end
    end
    block $outer
      i32.const 0
      local.set $pc
      loop $second
        block $s2
          block $s1
            block $s0
              local.get $pc
              br_table $s0 $s1 $s2
            end
            local.get $r
            i32.const 3
            i32.mul
            local.set $r
            i32.const 2
            local.set $pc
            br $second ;; threaded: to $s2
          end
          unreachable
        end
        local.get $r
        i32.const 1
        i32.add
        local.set $r
        br $outer
      end
    end
    local.get $r)
)
