;; Rejected at load (with the default 64 MiB limit): needs 2048 pages (128 MiB) initially.
(module
  (memory (export "memory") 2048)
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))
)
