;; An ABI version 1 policy written by hand that answers with what only version 2 defines:
;; its tool_call answer is ASK (action 2) and its servers answer gives server "lists" a
;; prompt deny list (field 7). A v1 guest is held to v1: the ask fails closed and the list
;; is dropped.
;;   ToolCallOutput{action: 2}                         08 02
;;   ServersOutput{decisions: [{name: "lists", deny_prompts: ["p"]}]}
;;     0a 0a  0a 05 "lists"  3a 01 "p"
(module
  (memory (export "memory") 2)
  (data (i32.const 16) "\08\02")
  (data (i32.const 32) "\0a\0a\0a\05lists\3a\01p")

  (func (export "warden_abi_version") (result i32) (i32.const 1))
  ;; servers | tool_call
  (func (export "warden_hooks") (result i32) (i32.const 5))

  (func (export "warden_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 65536)) (then (return (i32.const 0))))
    (i32.const 65536))

  (func (export "warden_tool_call") (param $p i32) (param $n i32) (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 2)))
  (func (export "warden_servers") (param $p i32) (param $n i32) (result i64)
    (i64.or (i64.shl (i64.const 32) (i64.const 32)) (i64.const 12)))
)
