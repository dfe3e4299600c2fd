;; A version 2 guest whose answers use what version 2 added, to show what
;; the host makes of them for a guest of version 2:
;;   servers: ServersOutput{decisions: [ServerDecision{name: "fs",
;;     allow_tools: ["t"], allow_prompts: ["p"], deny_resources: ["r"]}]}
;;     0a 0d  0a 02 'f' 's'  22 01 't'  32 01 'p'  4a 01 'r'
;;   tool_call: ToolCallOutput{action: ASK, reason: "ok?"}
;;     08 02  12 03 'o' 'k' '?'
(module
  (memory (export "memory") 2)
  (data (i32.const 16) "\0a\0d\0a\02fs\22\01t\32\01p\4a\01r")
  (data (i32.const 64) "\08\02\12\03ok?")
  (func (export "warden_abi_version") (result i32) (i32.const 2))
  (func (export "warden_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 65536)) (then (return (i32.const 0))))
    (i32.const 65536))
  (func (export "warden_servers") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 15)))
  (func (export "warden_tool_call") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 64) (i64.const 32)) (i64.const 7)))
)
