;; Functions in the shape Go's wasm backend emits, for pin (pin.go): local
;; 1 caches the stack pointer (global 0), a dispatch loop over a chain of
;; blocks, a prologue with a stack check and a frame allocation, calls that
;; push a return address and reload SP, SP-relative loads and stores
;; (direct and through `SP + K` addresses), nil-check ifs that call a
;; panic function, a call that pushes nothing (a write barrier), jumps
;; through the dispatch loop, and epilogues.
;;
;; The callees cover the ways a call can return: $leaf follows the
;; convention; $mover returns normally with the stack moved (global 0 16
;; bytes lower: pin must reload SP and resume at the call's resume point);
;; $unwind returns 1 (unwinding); $wb pushes nothing and leaves SP alone;
;; $wbmove moves SP (pin traps: $moved checks that).
;;
;; TestPin runs every export here, instrumented and not (same results, same
;; memory), and checks that pin rewrote the Go-shaped ones.
(module
  (type $go (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (global $sp (mut i32) (i32.const 40000))
  (global $x (mut i64) (i64.const 0))
  (global $g (mut i64) (i64.const 0)) ;; the goroutine: stackguard at +16
  (data (i32.const 16) "\00\04\00\00") ;; stackguard 1024

  ;; morestack: never called (the stack check passes).
  (func $morestack (type $go) unreachable)

  ;; A frameless leaf: result (its SP+16) = arg (SP+8) * 3 + 1.
  (func $leaf (type $go) (local i32 i64)
    global.get 0
    local.set 1
    block
      loop
        block
          local.get 0
          br_table 0 0
        end
        local.get 1
        local.get 1
        i64.load offset=8
        i64.const 3
        i64.mul
        i64.const 1
        i64.add
        i64.store offset=16
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  ;; $mover returns with SP 16 bytes below where it should be, as if the
  ;; stack had moved.
  (func $mover (type $go)
    global.get 0
    i32.const 8
    i32.add
    i32.const 16
    i32.sub
    global.set 0
    i32.const 0)

  ;; $unwind returns 1: the caller unwinds (returns 1 at once).
  (func $unwind (type $go)
    global.get 0
    i32.const 8
    i32.add
    global.set 0
    i32.const 1)

  ;; Write barriers: no push, a result, SP left alone (or moved).
  (func $wb (result i64) i64.const 5)
  (func $wbmove (result i64)
    global.get 0
    i32.const 16
    i32.sub
    global.set 0
    i64.const 6)

  ;; f: a frame of 48 bytes. Segment 0: prologue; stores; a nil check;
  ;; calls $leaf. Segment 1: reads the result; calls $mover (or $unwind,
  ;; when the leaf's result is odd... never: it is always 1 mod 3). Segment
  ;; 2: a write barrier, an if/else, a jump back to segment 1 while a
  ;; counter runs; segment 3: the epilogue (the result in $x).
  (func $f (export "f") (type $go) (local i32 i64 i64)
    global.get 0
    local.set 1
    block
      loop
        block
          block
            block
              block
                local.get 0
                br_table 0 0 1 2 3 3
              end ;; segment 0
              local.get 1
              global.get 2
              i32.wrap_i64
              i32.load offset=16
              i32.le_u
              if
                local.get 1
                i32.const 8
                i32.sub
                local.tee 1
                global.set 0
                local.get 1
                i64.const 0x10000
                i64.store
                i32.const 0
                call $morestack
                global.get 0
                local.set 1
                br_if 5
              end
              local.get 1
              i32.const 48
              i32.sub
              local.tee 1
              global.set 0
              ;; stores: direct, and through SP + K
              local.get 1
              i64.const 9
              i64.store offset=16
              local.get 1
              i64.extend_i32_u
              i64.const 24
              i64.add
              i32.wrap_i64
              global.get 1
              i64.store
              local.get 1
              i64.extend_i32_u
              i64.const 32
              i64.add
              i32.wrap_i64
              local.get 1
              i64.load offset=16
              i64.store
              ;; a nil check: SP+16 is 9, never 0
              local.get 1
              i64.load offset=16
              i64.eqz
              if
                local.get 1
                i32.const 8
                i32.sub
                local.tee 1
                global.set 0
                local.get 1
                i64.const 0x10001
                i64.store
                i32.const 0
                call $unwind
                global.get 0
                local.set 1
                br_if 5
              end
              ;; the leaf's argument at SP+0: x + 4
              local.get 1
              global.get 1
              i64.const 4
              i64.add
              i64.store
              local.get 1
              i32.const 8
              i32.sub
              local.tee 1
              global.set 0
              local.get 1
              i64.const 0x10002
              i64.store
              i32.const 0
              call $leaf
              global.get 0
              local.set 1
              br_if 4
            end ;; segment 1: the leaf's result at SP+8
            local.get 1
            local.get 1
            i64.load offset=8
            local.get 1
            i64.load offset=24
            i64.add
            i64.store offset=40
            local.get 1
            i32.const 8
            i32.sub
            local.tee 1
            global.set 0
            local.get 1
            i64.const 0x10003
            i64.store
            i32.const 0
            call $mover
            global.get 0
            local.set 1
            br_if 3
          end ;; segment 2: SP moved 16 bytes down
          local.get 1
          i64.load offset=56 ;; (SP+40 before the move)
          local.set 2
          call $wb
          global.get 0
          local.set 1
          local.get 2
          i64.add
          local.set 2
          local.get 2
          i64.const 1
          i64.and
          i64.eqz
          if
            local.get 1
            local.get 2
            i64.store offset=8
          else
            local.get 1
            local.get 2
            i64.const 1
            i64.add
            i64.store offset=8
          end
          ;; back to segment 1 while x < 3
          global.get 1
          i64.const 1
          i64.add
          global.set 1
          global.get 1
          i64.const 3
          i64.lt_u
          if
            i32.const 2
            local.set 0
            br 2
          end
        end ;; segment 3: the epilogue
        local.get 1
        i64.load offset=8
        global.set 1
        local.get 1
        i32.const 48
        i32.add
        local.tee 1
        global.set 0
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  ;; moved: a frameless function whose write barrier moves SP; pinned, it
  ;; traps there.
  (func $moved (export "moved") (type $go) (local i32 i64)
    global.get 0
    local.set 1
    block
      loop
        block
          local.get 0
          br_table 0 0
        end
        local.get 1
        i64.const 1
        i64.store offset=8
        call $wbmove
        global.get 0
        local.set 1
        local.get 1
        i64.load offset=8
        i64.add
        global.set 1
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  ;; cached: pointers spilled to the stack and reloaded (cachedLoad): two
  ;; reads through the pointer at SP+8 (the second from the cache local),
  ;; then a store to that slot (the cache must forget it), then a read
  ;; through the new pointer; then across an if.
  (data (i32.const 100) "\01\00\00\00\00\00\00\00\02\00\00\00\00\00\00\00")
  (data (i32.const 200) "\07\00\00\00\00\00\00\00\0b\00\00\00\00\00\00\00")
  (func $cached (export "cached") (type $go) (local i32 i64 i64)
    global.get 0
    local.set 1
    block
      loop
        block
          local.get 0
          br_table 0 0
        end
        local.get 1
        i64.const 100
        i64.store offset=8
        local.get 1
        i64.load offset=8
        i32.wrap_i64
        i64.load
        local.get 1
        i64.load offset=8
        i32.wrap_i64
        i64.load offset=8
        i64.const 3
        i64.mul
        i64.add
        local.set 2
        local.get 1
        i64.const 200
        i64.store offset=8
        local.get 1
        i64.load offset=8
        i32.wrap_i64
        i64.load
        i64.const 5
        i64.mul
        local.get 2
        i64.add
        local.set 2
        local.get 2
        i64.const 0
        i64.ne
        if
          local.get 1
          i64.const 100
          i64.store offset=8
        end
        ;; a read only on a branch not taken: the cache must not keep it
        local.get 2
        i64.eqz
        if
          local.get 1
          i64.load offset=8
          i32.wrap_i64
          i64.load
          global.set 1
        end
        local.get 1
        i64.load offset=8
        i32.wrap_i64
        i64.load offset=8
        local.get 2
        i64.add
        global.set 1
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  ;; regs: pointers in i64 registers, wrapped to addresses at each use
  ;; (cachedWrap): a repeat, a new value of the register (the wrap must be
  ;; redone), a wrap only on a branch not taken, then a use after it.
  (func $regs (export "regs") (type $go) (local i32 i64 i64 i64)
    global.get 0
    local.set 1
    block
      loop
        block
          local.get 0
          br_table 0 0
        end
        local.get 1
        i64.load offset=8
        local.set 3
        i64.const 100
        local.set 2
        local.get 2
        i32.wrap_i64
        i64.load
        local.get 2
        i32.wrap_i64
        i64.load offset=8
        i64.add
        local.get 3
        i64.add
        local.set 3
        i64.const 200
        local.set 2
        local.get 2
        i32.wrap_i64
        i64.load
        local.get 3
        i64.add
        local.set 3
        i64.const 108
        local.set 4
        local.get 3
        i64.const 1000000
        i64.gt_u
        if
          local.get 2
          i32.wrap_i64
          i64.load offset=8
          local.set 3
          local.get 4 ;; first wrap of local 4: on the branch not taken
          i32.wrap_i64
          drop
        end
        local.get 4
        i32.wrap_i64
        i64.load
        local.get 3
        i64.add
        local.set 3
        local.get 2
        i32.wrap_i64
        i64.load offset=8
        local.get 3
        i64.add
        global.set 1
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  ;; sp and x, for the test.
  (func (export "sp") (result i32) global.get 0)
  (func (export "x") (result i64) global.get 1)
)
