;; Accepted: exports servers and tool_call but warden_hooks says only tool_call.
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_hooks") (result i32) (i32.const 4))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
  (func (export "warden_tool_call") (param i32 i32) (result i64) (i64.const 0))
)
